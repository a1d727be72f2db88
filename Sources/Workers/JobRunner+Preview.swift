import Foundation
import HighlightJob
import MediaVocabulary
import JobMedia
import Logging
import Store

/// A `quality=original` highlight's preview: the original is stored and the job completed first;
/// then, in the same worker slot, an isolated child renders the highlight again as H.264 at most
/// 540p (`HighlightJobs.makePreview`), and the preview is published and recorded as ready (or
/// failed: the original is still there to download).
extension JobRunner {
    func makePreview(_ job: Job, workspace: JobWorkspace, log: Logger) async {
        guard let current = try? await database.job(id: job.id), current.status == .completed,
            current.output?.preview?.state == .pending
        else { return }
        // Its own token: the job's stops with its lease, which a completed job no longer has.
        let token = CancellationToken()
        previews.withLock { $0[job.id] = token }
        defer { _ = previews.withLock { $0.removeValue(forKey: job.id) } }
        let started = clock()
        let seconds = max(60, min(timeBudget(job), settings.timeBudgetSeconds + 2 * (current.output?.duration ?? 0)))
        var preview = JobPreview(state: .failed)
        if let made = await highlights.makePreview(
            workspace: workspace, isolation: isolation, seconds: seconds, token: token, log: log)
        {
            if (try? await mediaStorage.publish(jobID: job.id, files: [.preview])) != nil {
                preview = JobPreview(state: .ready, size: made.size, width: made.width, height: made.height)
            } else {
                log.warning("the preview could not be stored")
            }
        }
        do {
            try await database.setPreview(id: job.id, preview, now: clock())
        } catch {
            log.error("cannot record the preview", metadata: ["error": "\(error)"])
        }
        log.info(
            "preview \(preview.state.rawValue)",
            metadata: ["seconds": "\(String(format: "%.1f", clock().timeIntervalSince(started)))"])
    }
}
