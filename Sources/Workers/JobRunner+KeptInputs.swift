import Foundation
import HighlightJob
import Store
import Logging
import MomentsConfig

/// Inputs kept for re-cuts, once a highlight is made: a recognised re-upload of a kept video keeps
/// one copy of it, and the account's kept inputs stay within its plan's `keptInputBytes`.
///
/// One copy, the newest: the earlier job's input is deleted and the earlier job's re-cuts copy the
/// new job's (`edit.inputHeldBy`). The newest lives longest (retention runs from each job's end),
/// so deleting or expiring the earlier job never touches the copy the later one uses. Only a video
/// recognised as the very same one (same timeline to a frame, same picture size, codec and length)
/// shares; a trimmed or re-encoded copy keeps its own input, counted in the allowance.
///
/// The allowance: when the kept inputs exceed it, the account's oldest are released (deleted
/// early; their re-cuts answer 410 `input_deleted`) until the rest fit; an input larger than the
/// whole allowance is not kept. Nothing is refused: an upload never fails for this.
extension JobRunner {
    func settleKeptInputs(_ job: Job, recognized: RecognizedReupload?, log: Logger) async {
        guard !settings.keepUploads, job.edit?.keepsInput == true else { return }
        do {
            if let recognized, recognized.sameTimeline,
                let earlier = try await database.job(id: recognized.earlierJobId, accountId: job.accountId),
                earlier.id != job.id, earlier.status == .completed, earlier.edit?.keepsInput == true,
                Self.sameVideo(job.input, earlier.input)
            {
                // The copy to drop: the earlier job's, or the one holding it for it.
                let holder = earlier.edit?.inputHeldBy ?? earlier.id
                if holder != job.id {
                    try await database.moveKeptInput(from: holder, to: job.id, accountId: job.accountId)
                    await mediaStorage.removeInput(jobID: holder)
                    log.info(
                        "re-upload of a kept video: one copy kept",
                        metadata: ["of": "\(earlier.id)", "dropped": "\(holder)"])
                }
            }
            try await keepWithinAllowance(job, log: log)
        } catch {
            log.warning(
                "cannot settle the account's kept inputs; the sweeper removes them at retention",
                metadata: ["error": "\(error)"])
        }
    }

    /// Releases the account's oldest kept inputs (the new job's last) while they exceed the plan's allowance.
    func keepWithinAllowance(_ job: Job, log: Logger) async throws {
        let entitlement = try await database.entitlement(accountId: job.accountId, now: clock())
        let allowance = (entitlement.grantsPro ? plans.pro : plans.free).keptInputBytes
        let kept = try await database.keptInputJobs(accountId: job.accountId)
        var total = kept.reduce(Int64(0)) { $0 + max(0, $1.input.size) }
        guard total > allowance else { return }
        let order = kept.filter { $0.id != job.id } + kept.filter { $0.id == job.id }
        for victim in order where total > allowance {
            try await database.releaseKeptInput(jobId: victim.id, accountId: job.accountId)
            await mediaStorage.removeInput(jobID: victim.id)
            total -= max(0, victim.input.size)
            log.info(
                "kept input released early: the account's kept videos exceed its plan's allowance",
                metadata: ["released": "\(victim.id)", "bytes": "\(victim.input.size)", "allowance": "\(allowance)"])
        }
    }

    /// The same video as far as the probe tells: picture, codec and length (to a frame).
    static func sameVideo(_ a: JobInput, _ b: JobInput) -> Bool {
        let frame = 1 / max(1, a.frameRate > 0 ? a.frameRate : 30)
        return a.width == b.width && a.height == b.height && a.rotation == b.rotation && a.videoCodec == b.videoCodec
            && abs(a.duration - b.duration) <= frame
    }
}
