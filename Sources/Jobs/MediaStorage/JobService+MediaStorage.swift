import Foundation
import JobStore

extension JobService {
    /// Hands an accepted upload to the media storage; a storage failure becomes a refusal telling the
    /// user to try again (the cause goes to the log, never to the client).
    func storeInput(jobID: String, from path: String) async throws {
        do {
            try await mediaStorage.storeInput(jobID: jobID, from: path)
        } catch is MediaStorageError {
            throw Refusal.storageUnavailable
        }
    }

    /// How to serve a stored file of a completed job whose media were not deleted; nil when there
    /// is nothing to serve. Throws `MediaStorageError.unavailable` when the storage cannot answer.
    public func media(_ job: Job, _ file: MediaFile) async throws -> MediaDownload? {
        guard job.status == .completed, job.mediaDeletedAt == nil else { return nil }
        do {
            return try await mediaStorage.download(jobID: job.id, file: file)
        } catch MediaStorageError.notFound {
            return nil
        }
    }
}
