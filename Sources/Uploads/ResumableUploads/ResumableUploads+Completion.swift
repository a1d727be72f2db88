import Foundation
import Requests
import Store
import Wording

extension ResumableUploads {
    /// Every byte is in: the file becomes a job through the plain upload's acceptance (probe in the
    /// isolated child, plan limits, quota reserved in the job's transaction). A refusal ends the
    /// upload as failed (its bytes deleted, nothing charged) and is thrown.
    func complete(_ upload: ResumableUpload, holder: String, account: Account) async throws -> Outcome {
        var upload = upload
        let path = staging.path(upload.id)
        let now = self.now
        _ = try await store.recordUploadOffset(
            id: upload.id, holder: holder, offset: upload.offset, length: upload.length,
            heldUntil: now.addingTimeInterval(Self.completionHoldSeconds),
            expiresAt: now.addingTimeInterval(expirySeconds), release: false, now: now)
        do {
            try await staging.prepare(id: upload.id, offset: upload.offset)
            let plan = try await intake.policy.accountPlan(account)
            let (job, usage) = try await intake.acceptUpload(
                at: path, account: account, targetDuration: upload.targetDuration,
                quality: upload.quality, plan: plan, edit: EditRequest(upload.edit),
                sourceName: upload.filename.flatMap(EditRequest.displayName))
            if try await !store.finishUpload(
                id: upload.id, holder: holder, state: .completed, jobId: job.id, errorCode: nil,
                errorMessage: nil, now: self.now)
            {
                logger.error(
                    "a resumable upload became a job but its row could not record it (cancelled meanwhile?)",
                    metadata: ["upload": "\(upload.id)", "job": "\(job.id)"])
            }
            await staging.remove(id: upload.id)
            upload.state = .completed
            upload.jobId = job.id
            return .completed(upload, job, usage)
        } catch {
            let rejection = error as? Refusal
            // A failure that is not a refusal (the database or the bucket for a moment) keeps
            // the bytes when they are still staged: the client completes the upload again with
            // an empty append at its offset.
            if rejection == nil, FileManager.default.fileExists(atPath: path) || staging.parts != nil {
                logger.error(
                    "completing a resumable upload failed; its bytes are kept for a retry",
                    metadata: ["upload": "\(upload.id)", "error": "\(error)"])
                throw error
            }
            let code = rejection?.code ?? "upload_failed"
            let message = rejection?.message ?? Say.uploadNotTurnedIntoJob
            _ = try? await store.finishUpload(
                id: upload.id, holder: holder, state: .failed, jobId: nil, errorCode: code,
                errorMessage: message, now: now)
            await staging.remove(id: upload.id)
            throw error
        }
    }
}
