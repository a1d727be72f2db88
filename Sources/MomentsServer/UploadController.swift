import Accounts
import Foundation
import HTTPTypes
import HTTPEdge
import Hummingbird
import MomentsConfig
import MediaVocabulary
import Requests
import Store
import Telemetry
import Uploads
import Wording

/// POST /api/v1/upload and GET /api/v1/upload/formats.
struct UploadController {
    let intake: UploadIntake
    let settings: ServiceSettings
    /// The uploads being received now (per account, server-wide, disk declared).
    let uploads: UploadRegistry
    /// What this server accepts (the root asks the linked FFmpeg once).
    let catalog: FormatCatalog

    /// `keyed`: routes where a key is optional (the formats answer a caller with a key in its plan's limits).
    func addRoutes(
        keyed: RouterGroup<AppRequestContext>, protected: RouterGroup<AppRequestContext>, table: RouteTable
    ) {
        table.add(.post, "/api/v1/upload", on: protected, use: upload)
        table.add(.get, "/api/v1/upload/formats", on: keyed, use: formats)
    }

    /// Every refusal that does not need the body comes before the body is invited (a client that
    /// sent `Expect: 100-continue` gets "100 Continue" only then): the month's quota (402), the
    /// plan's jobs at once counting the account's uploads in progress (429), the declared size
    /// (413), the server-wide upload cap (503) and the disk, counting what the other uploads in
    /// progress have declared and not yet written (507).
    @Sendable func upload(_ request: Request, context: AppRequestContext) async throws -> UploadResponse {
        do {
            let response = try await receive(request, context: context)
            UploadMetrics.accepted()
            return response
        } catch let problem as Problem {
            UploadMetrics.refused(code: problem.code)
            throw problem
        } catch let refusal as Refusal {
            UploadMetrics.refused(code: refusal.code)
            throw refusal  // its problem: ProblemMiddleware
        } catch {
            UploadMetrics.refused(code: "error")
            throw error
        }
    }

    /// The upload route itself (`upload` counts its outcome).
    func receive(_ request: Request, context: AppRequestContext) async throws -> UploadResponse {
        let account = try context.requireAccount()
        _ = try MultipartUpload.boundary(contentType: request.headers[.contentType])
        let (ticket, _) = uploads.begin(account: account.id)
        defer { uploads.end(ticket) }
        // The account's other uploads in progress count through their places in the store,
        // whichever process receives them.
        return try await intake.whileAdmitted(account) { current in
            try await receiveAdmitted(request, context: context, account: account, ticket: ticket, current: current)
        }
    }

    /// The upload once it has its place against the plan: size, server-wide cap, disk, body, job.
    func receiveAdmitted(
        _ request: Request, context: AppRequestContext, account: Account, ticket: UploadRegistry.Ticket,
        current: AccountPlan
    ) async throws -> UploadResponse {
        let settings = settings
        let boundary = try MultipartUpload.boundary(contentType: request.headers[.contentType])
        let declared = request.headers[.contentLength].flatMap { Int64($0) }
        let maxBytes = min(settings.maxUploadBytes, current.plan.maxUploadBytes)
        let tooLarge = intake.policy.fileTooLarge(limit: maxBytes, plan: current)
        if let declared, declared > maxBytes + MultipartUpload.maxOverheadBytes { throw tooLarge }
        try uploads.startReceiving(ticket, declaredBytes: declared ?? 0, logger: context.logger)
        try intake.checkDiskSpace(expectedBytes: (declared ?? 0) + uploads.outstandingBytes(excluding: ticket))
        context.inviteBody()
        let path = intake.newUploadPath()
        let received = try await MultipartUpload.receive(
            request.body, boundary: boundary, to: path, maxFileBytes: maxBytes,
            tooLarge: tooLarge, logger: context.logger
        ) { written in
            uploads.wrote(ticket, bytes: written)
            // Every upload in progress, this one included, may still write what it declared.
            try intake.checkDiskSpace(expectedBytes: uploads.outstandingBytes())
        }
        uploads.wrote(ticket, bytes: received.fileBytes)
        let options: HighlightOptions
        do {
            options = try HighlightOptions.parse(fields: received.fields, limits: settings.highlightLimits)
            try intake.policy.check(quality: options.quality, plan: current)
        } catch {
            try? FileManager.default.removeItem(atPath: path)
            throw error
        }
        let (job, usage) = try await intake.acceptUpload(
            at: path, account: account, targetDuration: options.targetDuration, quality: options.quality,
            plan: current, edit: options.edit, sourceName: received.filename)
        let base = settings.baseURL
        let estimate = job.estimatedSeconds
        return UploadResponse(
            jobId: job.id,
            message:
                Say.uploadReceived(bytes: received.fileBytes, seconds: job.input.duration, estimate: estimate),
            estimatedTime: estimate,
            statusUrl: "\(base)/api/v1/jobs/\(job.id)/status",
            links: JobLinks(job, baseURL: base),
            quota: QuotaView(usage))
    }

    /// The containers and codecs the linked FFmpeg reads (computed once).

    struct FormatsResponse: ResponseEncodable {
        struct Limits: Codable {
            var maxBytes: Int64, maxDurationSeconds: Double
            enum CodingKeys: String, CodingKey {
                case maxBytes = "max_bytes", maxDurationSeconds = "max_duration_seconds"
            }
        }
        struct TargetRange: Codable { var min: Int, max: Int, `default`: Int }
        var containers: [FormatCatalog.Entry]
        var videoCodecs: [FormatCatalog.Entry]
        var audioCodecs: [FormatCatalog.Entry]
        var limits: Limits
        var targetDuration: TargetRange
        var qualities: [String]
        var defaultQuality: String
        enum CodingKeys: String, CodingKey {
            case containers, videoCodecs = "video_codecs", audioCodecs = "audio_codecs", limits
            case targetDuration = "target_duration", qualities, defaultQuality = "default_quality"
        }
    }

    @Sendable func formats(_ request: Request, context: AppRequestContext) async throws -> FormatsResponse {
        let s = settings
        var limits = FormatsResponse.Limits(maxBytes: s.maxUploadBytes, maxDurationSeconds: s.maxDurationSeconds)
        if let account = context.account {
            // The caller's plan's, within the server's.
            let plan = try await intake.policy.accountPlan(account).plan
            limits.maxBytes = min(limits.maxBytes, plan.maxUploadBytes)
            limits.maxDurationSeconds = min(limits.maxDurationSeconds, plan.maxDurationSeconds)
        }
        return FormatsResponse(
            containers: catalog.containers, videoCodecs: catalog.videoCodecs, audioCodecs: catalog.audioCodecs,
            limits: limits,
            targetDuration: .init(min: s.minTargetDuration, max: s.maxTargetDuration, default: s.defaultTargetDuration),
            qualities: HighlightQuality.allCases.map(\.rawValue),
            defaultQuality: HighlightQuality.default.rawValue)
    }
}
