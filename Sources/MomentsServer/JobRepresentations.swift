import MediaVocabulary
import Accounts
import Foundation
import HTTPEdge
import Hummingbird
import Store
import Wording

/// The app's UploadResponse (seed 004), plus the links a curl user needs and the quota left.
struct UploadResponse: ResponseEncodable {
    var jobId: String
    var message: String
    var estimatedTime: Int?
    var statusUrl: String
    var links: JobLinks
    var quota: QuotaView

    enum CodingKeys: String, CodingKey {
        case jobId = "job_id", message, estimatedTime = "estimated_time", statusUrl = "status_url", links, quota
    }
}

/// This month's usage: limit and remaining are null when the plan has no cap.
struct QuotaView: Codable, Sendable {
    var period: String
    var limit: Int?
    var used: Int
    var remaining: Int?
    var resetsAt: Date

    enum CodingKeys: String, CodingKey { case period, limit, used, remaining, resetsAt = "resets_at" }

    init(_ usage: QuotaUsage) {
        period = usage.period; limit = usage.limit; used = usage.used; remaining = usage.remaining;
        resetsAt = usage.resetsAt
    }

    func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(period, forKey: .period)
        try c.encode(limit, forKey: .limit)
        try c.encode(used, forKey: .used)
        try c.encode(remaining, forKey: .remaining)
        try c.encode(resetsAt, forKey: .resetsAt)
    }
}

/// The download URL of a job whose result is stored, else nil.
func resultURL(id: String, status: JobState, mediaDeleted: Bool, baseURL: String) -> String? {
    status == .completed && !mediaDeleted ? "\(baseURL)/api/v1/jobs/\(id)/download" : nil
}

func resultURL(_ job: Job, baseURL: String) -> String? {
    resultURL(id: job.id, status: job.status, mediaDeleted: job.mediaDeletedAt != nil, baseURL: baseURL)
}

/// The app's JobStatus (seed 004), field for field: job_id, status, progress, message,
/// result_url (null until completed).
struct JobStatusResponse: ResponseGenerator {
    var jobId: String
    var status: JobState
    var progress: Int
    var message: String?
    var resultUrl: String?

    /// Apps poll this: written directly rather than through JSONEncoder (sorted keys like every
    /// other response, null fields present, a final newline).
    public func response(from request: Request, context: some RequestContext) throws -> Response {
        var out = ByteBuffer()
        out.reserveCapacity(256)
        write(to: &out)
        out.writeStaticString("\n")
        return Response(
            status: .ok, headers: [.contentType: "application/json; charset=utf-8"], body: .init(byteBuffer: out))
    }

    /// The JSON object, on one line (the events stream's `data:` carries it too).
    func write(to out: inout ByteBuffer) {
        out.writeStaticString("{\"job_id\":")
        JSONText.write(jobId, to: &out)
        out.writeStaticString(",\"message\":")
        if let message { JSONText.write(message, to: &out) } else { out.writeStaticString("null") }
        out.writeStaticString(",\"progress\":")
        out.writeString(String(progress))
        out.writeStaticString(",\"result_url\":")
        if let resultUrl { JSONText.write(resultUrl, to: &out) } else { out.writeStaticString("null") }
        out.writeStaticString(",\"status\":")
        JSONText.write(status.rawValue, to: &out)
        out.writeStaticString("}")
    }

    init(_ job: Job, baseURL: String) {
        self.init(
            JobStatusRow(
                id: job.id, status: job.status, progress: job.progress, message: job.message,
                mediaDeleted: job.mediaDeletedAt != nil), baseURL: baseURL)
    }

    init(_ row: JobStatusRow, baseURL: String) {
        jobId = row.id
        status = row.status
        progress = row.progress
        message = row.message
        resultUrl = resultURL(id: row.id, status: row.status, mediaDeleted: row.mediaDeleted, baseURL: baseURL)
    }
}

struct JobLinks: Codable, Sendable {
    var this: String
    var status: String
    var download: String?
    var poster: String?
    var analysis: String?
    var storyboard: String?
    var timeline: String?
    var recuts: String?
    var events: String
    /// A quality=original highlight's H.264 preview, once it is ready.
    var preview: String?

    enum CodingKeys: String, CodingKey {
        case this = "self", status, download, poster, analysis, storyboard, timeline, recuts, events, preview
    }

    init(_ job: Job, baseURL: String) {
        let base = "\(baseURL)/api/v1/jobs/\(job.id)"
        this = base
        status = base + "/status"
        events = base + "/events"
        download = resultURL(job, baseURL: baseURL)
        let ready = download != nil
        poster = ready ? base + "/poster" : nil
        analysis = ready ? base + "/analysis" : nil
        storyboard = ready ? base + "/storyboard.png" : nil
        timeline = ready ? base + "/timeline?format=fcpxml" : nil
        recuts = ready && job.edit?.keepsInput == true ? base + "/recuts" : nil
        preview = ready && JobPreviewView.state(job) == "ready" ? base + "/preview" : nil
    }
}

/// GET /api/v1/jobs/{id}: everything about a job.
struct JobDetailResponse: ResponseEncodable {
    struct Parameters: Codable {
        var targetDuration: Int; var quality: String; var aspect: String; var focus: String; var include: [Double]
        var exclude: [TimeRange]
        enum CodingKeys: String, CodingKey {
            case targetDuration = "target_duration", quality, aspect, focus, include, exclude
        }
    }
    struct Output: Codable {
        var duration: Double, size: Int64, width: Int, height: Int, analysisReused: Bool
        /// How the pictures were made: "copy" (quality=original: the source's own) or "encode".
        var render: Render
        /// quality=original: the H.264 preview every browser plays.
        var preview: JobPreviewView?
        /// The storyboard picture's size and its filmstrip row, in pixels.
        var storyboard: StoryboardFrame?
        enum CodingKeys: String, CodingKey {
            case duration, size, width, height, analysisReused = "analysis_reused", render, preview, storyboard
        }
    }
    struct Render: Codable {
        var method: String
        /// Why a quality=original highlight was encoded.
        var reason: String?
        var largestStartShift: Double?
        enum CodingKeys: String, CodingKey { case method, reason, largestStartShift = "largest_start_shift" }
    }
    struct Input: Codable {
        var duration: Double, size: Int64, container: String, videoCodec: String, audioCodec: String?
        var width: Int, height: Int, rotation: Int, frameRate: Double
        enum CodingKeys: String, CodingKey {
            case duration, size, container, videoCodec = "video_codec", audioCodec = "audio_codec", width, height,
                rotation
            case frameRate = "frame_rate"
        }
    }
    struct Failure: Codable { var code: String; var message: String }
    /// The earlier upload of the account this one was recognised as.
    struct Duplicate: Codable {
        var jobId: String, offsetSeconds: Double, resultReused: Bool
        enum CodingKeys: String, CodingKey {
            case jobId = "job_id", offsetSeconds = "offset_seconds", resultReused = "result_reused"
        }
    }

    var jobId: String
    var status: JobState
    var progress: Int
    var stage: String?
    var message: String
    var parameters: Parameters
    var input: Input
    var createdAt: Date
    var startedAt: Date?
    var finishedAt: Date?
    var attempts: Int
    var estimatedTime: Int
    var processingSeconds: Double?
    var error: Failure?
    var output: Output?
    var segments: [ListedSegment]
    /// How many of the segments are people moments (nil before the highlight is made).
    var peopleMoments: Int?
    /// The job this one re-cuts.
    var recutOf: String?
    var duplicateOf: Duplicate?
    var resultUrl: String?
    var mediaDeletedAt: Date?
    var links: JobLinks

    enum CodingKeys: String, CodingKey {
        case jobId = "job_id", status, progress, stage, message, parameters, input, createdAt = "created_at"
        case startedAt = "started_at", finishedAt = "finished_at", attempts, estimatedTime = "estimated_time"
        case processingSeconds = "processing_seconds", error, output, segments, resultUrl = "result_url"
        case mediaDeletedAt = "media_deleted_at", links, recutOf = "recut_of", duplicateOf = "duplicate_of"
        case peopleMoments = "people_moments"
    }

    init(_ job: Job, baseURL: String) {
        jobId = job.id; status = job.status; progress = job.progress; stage = job.stage; message = job.message
        let edit = job.edit ?? JobEdit()
        parameters = Parameters(
            targetDuration: job.targetDuration, quality: job.quality.rawValue, aspect: edit.aspect.rawValue,
            focus: (edit.focus ?? .auto).rawValue,
            include: edit.include, exclude: edit.exclude)
        recutOf = edit.recutOf
        duplicateOf = job.output?.duplicateOf.map {
            Duplicate(jobId: $0.jobId, offsetSeconds: ms($0.offsetSeconds), resultReused: $0.resultCopied)
        }
        let i = job.input
        input = Input(
            duration: i.duration, size: i.size, container: i.container, videoCodec: i.videoCodec,
            audioCodec: i.audioCodec,
            width: i.width, height: i.height, rotation: i.rotation, frameRate: i.frameRate)
        createdAt = job.createdAt; startedAt = job.startedAt; finishedAt = job.finishedAt; attempts = job.attempts
        estimatedTime = job.estimatedSeconds; processingSeconds = job.processingSeconds
        error = job.errorCode.map { Failure(code: $0, message: job.errorMessage ?? job.message) }
        output = job.output.map {
            Output(
                duration: ms($0.duration), size: $0.size, width: $0.width, height: $0.height,
                analysisReused: $0.analysisReused ?? false,
                render: Render(
                    method: $0.render?.method ?? "encode", reason: $0.render?.reason,
                    largestStartShift: $0.render?.largestStartShift),
                preview: JobPreviewView(job), storyboard: $0.storyboard)
        }
        segments = (job.segments ?? []).map(ListedSegment.init)
        peopleMoments = job.segments.map { $0.filter { $0.people == true }.count }
        resultUrl = resultURL(job, baseURL: baseURL)
        mediaDeletedAt = job.mediaDeletedAt
        links = JobLinks(job, baseURL: baseURL)
    }
}

/// Seconds to the millisecond (JSON without float noise).
func ms(_ seconds: Double) -> Double { (seconds * 1000).rounded() / 1000 }

/// GET /api/v1/jobs: one page, newest first.
struct JobListResponse: ResponseEncodable {
    struct Item: Codable {
        var jobId: String, status: JobState, progress: Int, message: String, createdAt: Date, finishedAt: Date?,
            resultUrl: String?
        var url: String
        /// What a person tells rows apart by: the file, the length asked and made, the shape, the job
        /// it re-cuts, and until when its media are kept.
        var sourceName: String?
        var targetDuration: Int
        var duration: Double?
        var aspect: String
        var recutOf: String?
        var keptUntil: Date?
        enum CodingKeys: String, CodingKey {
            case jobId = "job_id", status, progress, message, createdAt = "created_at", finishedAt = "finished_at"
            case resultUrl = "result_url", url
            case sourceName = "source_name", targetDuration = "target_duration", duration, aspect
            case recutOf = "recut_of", keptUntil = "kept_until"
        }

        init(_ job: Job, baseURL base: String) {
            jobId = job.id; status = job.status; progress = job.progress; message = job.message
            createdAt = job.createdAt; finishedAt = job.finishedAt
            resultUrl = resultURL(job, baseURL: base)
            url = "\(base)/api/v1/jobs/\(job.id)"
            sourceName = job.edit?.sourceName
            targetDuration = job.targetDuration
            duration = job.status == .completed ? job.output.map { ms($0.duration) } : nil
            aspect = (job.edit?.aspect ?? .source).rawValue
            recutOf = job.edit?.recutOf
            if resultUrl != nil, let finished = job.finishedAt, let hours = job.retentionHours {
                keptUntil = finished.addingTimeInterval(hours * 3600)
            }
        }
    }
    var jobs: [Item]
    var total: Int
    var limit: Int
    var offset: Int
    var next: String?
}

struct AccountCreatedResponse: ResponseEncodable {
    var accountId: String
    var apiKey: String
    var plan: String
    var message: String
    enum CodingKeys: String, CodingKey { case accountId = "account_id", apiKey = "api_key", plan, message }
}

/// A JSON string literal, escaped per RFC 8259.
enum JSONText {
    static func write(_ text: String, to out: inout ByteBuffer) {
        out.writeInteger(UInt8(ascii: "\""))
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "\""): out.writeStaticString("\\\"")
            case UInt8(ascii: "\\"): out.writeStaticString("\\\\")
            case 0x0A: out.writeStaticString("\\n")
            case 0x0D: out.writeStaticString("\\r")
            case 0x09: out.writeStaticString("\\t")
            case 0..<0x20:
                let hex = Array("0123456789abcdef".utf8)
                out.writeStaticString("\\u00")
                out.writeInteger(hex[Int(byte >> 4)])
                out.writeInteger(hex[Int(byte & 0x0F)])
            default: out.writeInteger(byte)
            }
        }
        out.writeInteger(UInt8(ascii: "\""))
    }
}

/// A quality=original highlight's preview as the API shows it: pending while the worker makes it,
/// ready, or failed (also when it has been pending too long: its worker stopped before recording it).
struct JobPreviewView: Codable {
    var state: String
    var size: Int64?
    var width: Int?
    var height: Int?

    /// Seconds after the job finished when a preview still pending counts as failed.
    static let pendingLimit: TimeInterval = 1800

    init?(_ job: Job) {
        guard let preview = job.output?.preview, let state = Self.state(job) else { return nil }
        self.state = state
        size = preview.size
        width = preview.width
        height = preview.height
    }

    static func state(_ job: Job, now: Date = Date()) -> String? {
        guard let preview = job.output?.preview else { return nil }
        if preview.state == .pending, let finished = job.finishedAt, now.timeIntervalSince(finished) > pendingLimit {
            return JobPreview.State.failed.rawValue
        }
        return preview.state.rawValue
    }

    /// Why there is no preview to serve.
    static func missing(_ job: Job) -> Problem {
        if state(job) == "pending" {
            return Problem(
                .conflict, code: "preview_pending",
                detail: Say.previewPending)
        }
        return Problem(.notFound, code: "no_preview", detail: Say.noPreview)
    }
}

/// A segment as the API lists it: the job's `Segment` in milliseconds (its score to three
/// decimals), with its duration, and `people` false when faces were not looked for.
struct ListedSegment: Encodable {
    let segment: Segment

    enum CodingKeys: String, CodingKey { case start, end, duration, score, reason, crop, people }

    func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        let s = segment
        try c.encode(ms(s.start), forKey: .start)
        try c.encode(ms(s.end), forKey: .end)
        try c.encode(ms(s.end - s.start), forKey: .duration)
        try c.encode((s.score * 1000).rounded() / 1000, forKey: .score)
        try c.encode(s.reason, forKey: .reason)
        try c.encodeIfPresent(
            s.crop.map { CropWindow(x: ms($0.x), y: ms($0.y), width: ms($0.width), height: ms($0.height)) }, forKey: .crop)
        try c.encode(s.people ?? false, forKey: .people)
    }
}
