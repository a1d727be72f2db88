import Foundation
import HTTPTypes
import HTTPEdge
import Hummingbird
import Store
import Workers
import Wording

/// The job resource: list, detail, status, cancel/delete, and its media (download, poster, analysis).
struct JobsController {
    let jobs: JobControl
    let baseURL: String
    let files = MediaResponder()

    func addRoutes(to group: RouterGroup<AppRequestContext>, table: RouteTable) {
        table.add(.get, "/api/v1/jobs", on: group, use: list)
        table.add(.get, "/api/v1/jobs/:id", on: group, use: detail)
        table.add(.delete, "/api/v1/jobs/:id", on: group, use: cancel)
        table.add(.get, "/api/v1/jobs/:id/status", on: group, use: status)
        table.add(.get, "/api/v1/jobs/:id/download", on: group, use: download)
        table.add(.head, "/api/v1/jobs/:id/download", on: group, use: download)
        table.add(.get, "/api/v1/jobs/:id/poster", on: group, use: poster)
        table.add(.head, "/api/v1/jobs/:id/poster", on: group, use: poster)
        table.add(.get, "/api/v1/jobs/:id/preview", on: group, use: preview)
        table.add(.head, "/api/v1/jobs/:id/preview", on: group, use: preview)
        table.add(.get, "/api/v1/jobs/:id/analysis", on: group, use: analysis)
        table.add(.head, "/api/v1/jobs/:id/analysis", on: group, use: analysis)
    }

    private func job(_ context: AppRequestContext) async throws -> Job { try await jobs.ownedJob(context) }

    @Sendable func status(_ request: Request, context: AppRequestContext) async throws -> JobStatusResponse {
        let account = try context.requireAccount()
        let id = try context.parameters.require("id")
        guard let row = try await jobs.jobStatus(id: id, account: account) else { throw Problem.jobNotFound(id) }
        return JobStatusResponse(row, baseURL: baseURL)
    }

    @Sendable func detail(_ request: Request, context: AppRequestContext) async throws -> JobDetailResponse {
        JobDetailResponse(try await job(context), baseURL: baseURL)
    }

    @Sendable func list(_ request: Request, context: AppRequestContext) async throws -> JobListResponse {
        let account = try context.requireAccount()
        let query = request.uri.queryParameters
        let limit = try Self.integer(query["limit"].map(String.init), name: "limit", default: 20, range: 1...100)
        let offset = try Self.integer(
            query["offset"].map(String.init), name: "offset", default: 0, range: 0...Int(Int32.max))
        let (jobs, total) = try await jobs.jobs(account: account, limit: limit, offset: offset)
        let base = baseURL
        let items = jobs.map { job in
            JobListResponse.Item(job, baseURL: base)
        }
        let next =
            offset + jobs.count < total ? "\(base)/api/v1/jobs?limit=\(limit)&offset=\(offset + jobs.count)" : nil
        return JobListResponse(jobs: items, total: total, limit: limit, offset: offset, next: next)
    }

    @Sendable func cancel(_ request: Request, context: AppRequestContext) async throws -> JobStatusResponse {
        let account = try context.requireAccount()
        let id = try context.parameters.require("id")
        guard let job = try await jobs.cancelOrDelete(id: id, account: account) else {
            throw Problem.jobNotFound(id)
        }
        var response = JobStatusResponse(job, baseURL: baseURL)
        if job.status != .cancelled, job.mediaDeletedAt != nil {
            response.message = Say.mediaDeleted
        }
        return response
    }

    @Sendable func download(_ request: Request, context: AppRequestContext) async throws -> Response {
        let job = try await job(context)
        let download = try ready(job, try await Problem.storageCall { try await jobs.media(job, .result) })
        return try await files.respond(
            request, context: context, download: download, contentType: "video/mp4",
            disposition: "attachment; filename=\"highlight_\(job.id).mp4\"")
    }

    @Sendable func poster(_ request: Request, context: AppRequestContext) async throws -> Response {
        let job = try await job(context)
        let download = try ready(job, try await Problem.storageCall { try await jobs.media(job, .poster) })
        return try await files.respond(
            request, context: context, download: download, contentType: "image/jpeg",
            disposition: "inline; filename=\"highlight_\(job.id).jpg\"")
    }

    /// A quality=original highlight's H.264 preview (409 while it is made, 404 when there is none).
    @Sendable func preview(_ request: Request, context: AppRequestContext) async throws -> Response {
        let job = try await job(context)
        guard job.status == .completed, job.mediaDeletedAt == nil else { throw JobMediaState.unavailable(job) }
        guard JobPreviewView.state(job) == "ready",
            let download = try await Problem.storageCall({ try await jobs.media(job, .preview) })
        else { throw JobPreviewView.missing(job) }
        return try await files.respond(
            request, context: context, download: download, contentType: "video/mp4",
            disposition: "inline; filename=\"preview_\(job.id).mp4\"")
    }

    @Sendable func analysis(_ request: Request, context: AppRequestContext) async throws -> Response {
        let job = try await job(context)
        let download = try ready(job, try await Problem.storageCall { try await jobs.media(job, .analysis) })
        return try await files.respond(
            request, context: context, download: download, contentType: "application/json", disposition: nil)
    }

    /// The file of a completed job, or 409 (not completed yet / failed / cancelled) or 410 (deleted).
    private func ready<Media>(_ job: Job, _ media: Media?) throws -> Media {
        if let media { return media }
        throw JobMediaState.unavailable(job)
    }

    static func integer(_ text: String?, name: String, default value: Int, range: ClosedRange<Int>) throws -> Int {
        guard let text else { return value }
        guard let number = Int(text), range.contains(number) else {
            throw Problem.badRequest(
                "invalid_query", Say.invalidQuery(name, from: range.lowerBound, to: range.upperBound))
        }
        return number
    }
}
