import MediaVocabulary
import Foundation
import HTTPTypes
import HTTPEdge
import Hummingbird
import MomentsConfig
import Requests
import Store
import Timeline
import Uploads
import Workers
import Wording

/// What a finished highlight offers beyond its file: re-cuts (POST /api/v1/jobs/{id}/recuts),
/// editable timelines (GET …/timeline?format=fcpxml|otio|edl) and the storyboard picture
/// (GET …/storyboard.png).
struct JobEditsController {
    let jobs: JobControl
    let intake: UploadIntake
    /// The crossfade between segments (seconds), as timelines show it.
    let crossfadeSeconds: Double
    let baseURL: String
    let files = MediaResponder()

    /// Largest re-cut request body.
    static let maxBodyBytes = 16 * 1024

    func addRoutes(to group: RouterGroup<AppRequestContext>, table: RouteTable) {
        table.add(.post, "/api/v1/jobs/:id/recuts", on: group, use: recut)
        table.add(.get, "/api/v1/jobs/:id/timeline", on: group, use: timeline)
        table.add(.get, "/api/v1/jobs/:id/storyboard.png", on: group, use: storyboard)
        table.add(.head, "/api/v1/jobs/:id/storyboard.png", on: group, use: storyboard)
    }

    private func job(_ context: AppRequestContext) async throws -> Job { try await jobs.ownedJob(context) }

    // MARK: Re-cuts

    @Sendable func recut(_ request: Request, context: AppRequestContext) async throws -> EditedResponse<UploadResponse>
    {
        let account = try context.requireAccount()
        let id = try context.parameters.require("id")
        let body = try await request.body.collect(upTo: Self.maxBodyBytes)
        let recut = try Self.parse(body)
        // A refusal (Refusal, RecutRefusal) becomes its problem in ProblemMiddleware.
        let (job, usage) = try await intake.recut(id, account: account, request: recut)
        let base = baseURL
        let response = UploadResponse(
            jobId: job.id,
            message:
                Say.recutQueued(of: id, seconds: job.targetDuration, aspect: (job.edit?.aspect ?? .source).rawValue, estimate: job.estimatedSeconds),
            estimatedTime: job.estimatedSeconds, statusUrl: "\(base)/api/v1/jobs/\(job.id)/status",
            links: JobLinks(job, baseURL: base), quota: QuotaView(usage))
        return EditedResponse(
            status: .created, headers: [.location: "\(base)/api/v1/jobs/\(job.id)"], response: response)
    }

    /// The JSON body: any of target_duration, quality, aspect, focus, include, exclude (an empty body
    /// re-cuts with the original's choices).
    static func parse(_ body: ByteBuffer) throws -> RecutRequest {
        guard body.readableBytes > 0 else { return RecutRequest() }
        let invalid = Problem.badRequest(
            "invalid_json",
            Say.recutBodyNotAnObject)
        guard let object = (try? JSONSerialization.jsonObject(with: Data(body.readableBytesView))) as? [String: Any]
        else { throw invalid }
        let known: Set<String> = ["target_duration", "quality", "aspect", "focus", "include", "exclude"]
        if let unknown = object.keys.first(where: { !known.contains($0) }) {
            throw Problem.badRequest(
                "unknown_field",
                Say.unknownRecutField(String(unknown.prefix(40)))
            )
        }
        var recut = RecutRequest()
        if let value = object["target_duration"] {
            guard let number = EditRequest.jsonNumber(value), number == number.rounded(), abs(number) < 1e6 else {
                throw Refusal.targetDurationNotWhole
            }
            recut.targetDuration = Int(number)
        }
        if let value = object["quality"] {
            guard let text = value as? String else { throw Refusal.qualityNotAString }
            recut.quality = text
        }
        if let value = object["aspect"] {
            guard let text = value as? String else { throw Refusal.aspectNotAString }
            recut.aspect = try EditRequest.parseAspect(text).rawValue
        }
        if let value = object["focus"] {
            guard let text = value as? String else { throw Refusal.invalidFocus("\(value)") }
            recut.focus = try EditRequest.parseFocus(text).rawValue
        }
        // include and exclude take the same shapes as the upload's fields, as JSON.
        if let value = object["include"] {
            let text = String(
                decoding: try JSONSerialization.data(withJSONObject: value is [Any] ? value : [value]),
                as: UTF8.self)
            recut.include = try EditRequest.parse(aspect: nil, include: text, exclude: nil).include
        }
        if let value = object["exclude"], !(value is NSNull) {
            guard value is [Any] else { throw Refusal.invalidExclude(.notAList) }
            let text = String(decoding: try JSONSerialization.data(withJSONObject: value), as: UTF8.self)
            recut.exclude = try EditRequest.parse(aspect: nil, include: nil, exclude: text).exclude
            if (value as? [Any])?.isEmpty == true { recut.exclude = [] }
        }
        return recut
    }

    // MARK: Timeline

    @Sendable func timeline(_ request: Request, context: AppRequestContext) async throws -> Response {
        let job = try await job(context)
        let name = request.uri.queryParameters["format"].map(String.init) ?? "fcpxml"
        guard let format = TimelineFormat(rawValue: name.lowercased()) else {
            throw Problem.badRequest("invalid_format", Say.invalidTimelineFormat)
        }
        guard job.status == .completed, job.mediaDeletedAt == nil, let segments = job.segments, !segments.isEmpty,
            let output = job.output
        else {
            // The same answers as a download of a job that has none.
            throw JobMediaState.unavailable(job)
        }
        let document = Self.document(job, segments: segments, output: output, crossfade: crossfadeSeconds)
        let text = TimelineExport.render(document, as: format)
        let filename = "highlight_\(job.id).\(format.fileExtension)"
        var headers: HTTPFields = [
            .contentType: format.mediaType, .contentDisposition: "attachment; filename=\"\(filename)\""
        ]
        headers[.cacheControl] = "private, no-cache"
        return Response(status: .ok, headers: headers, body: .init(byteBuffer: ByteBuffer(string: text)))
    }

    /// The highlight as a timeline over the original file: its segments in order, each with its
    /// reframe window, the crossfade the render used.
    static func document(_ job: Job, segments: [Segment], output: JobOutput, crossfade: Double) -> TimelineDocument {
        let input = job.input
        return TimelineDocument(
            title: Say.timelineTitle(job.id), sourceName: job.edit?.sourceName ?? "video_\(job.id).mp4",
            sourceDuration: input.duration, rate: TimelineRate.nearest(to: input.frameRate),
            sourceWidth: input.width, sourceHeight: input.height, outputWidth: output.width,
            outputHeight: output.height,
            hasAudio: input.audioCodec != nil, clips: segments, crossfadeSeconds: crossfade)
    }

    // MARK: Storyboard

    @Sendable func storyboard(_ request: Request, context: AppRequestContext) async throws -> Response {
        let job = try await job(context)
        guard let download = try await Problem.storageCall({ try await jobs.media(job, .storyboard) }) else {
            if job.status != .completed || job.mediaDeletedAt != nil { throw JobMediaState.unavailable(job) }
            throw Problem(
                .notFound, code: "no_storyboard",
                detail:
                    Say.noStoryboard
            )
        }
        return try await files.respond(
            request, context: context, download: download, contentType: "image/png",
            disposition: "inline; filename=\"storyboard_\(job.id).png\"")
    }
}
