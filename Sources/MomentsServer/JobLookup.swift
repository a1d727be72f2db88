import HTTPEdge
import Hummingbird
import Store
import Workers
import Wording

extension JobControl {
    /// The job named by the route's `:id`, if the request's account owns it; otherwise 404 (another
    /// account's job is indistinguishable from one that does not exist).
    func ownedJob(_ context: AppRequestContext) async throws -> Job {
        let account = try context.requireAccount()
        let id = try context.parameters.require("id")
        guard let job = try await job(id: id, account: account) else { throw Problem.jobNotFound(id) }
        return job
    }
}

/// What a request for a job's media answers when the job has none to give: 409 while it is not
/// completed (pending, processing, failed, cancelled), 410 once its media were deleted.
enum JobMediaState {
    static func unavailable(_ job: Job) -> Problem {
        switch job.status {
        case .completed:
            return Problem(
                .gone, code: "media_deleted",
                detail:
                    Say.resultDeleted
            )
        case .pending, .processing:
            return Problem(
                .conflict, code: "job_not_completed",
                detail:
                    Say.jobNotCompleted(job.id, state: job.status.rawValue, progress: job.progress),
                extensions: ["job_status": .string(job.status.rawValue), "progress": .int(job.progress)])
        case .failed:
            return Problem(
                .conflict, code: "job_failed",
                detail: Say.jobFailedNothingToDownload(job.errorMessage ?? job.message),
                extensions: ["job_status": .string(job.status.rawValue)])
        case .cancelled:
            return Problem(
                .conflict, code: "job_cancelled", detail: Say.jobCancelledNothingToDownload,
                extensions: ["job_status": .string(job.status.rawValue)])
        }
    }
}
