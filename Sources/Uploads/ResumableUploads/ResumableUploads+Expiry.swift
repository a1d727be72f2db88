import Foundation
import Store

extension ResumableUploads {
    /// DELETE: a receiving upload is terminated and its bytes deleted (an append in progress in
    /// this process is stopped). Nil: no such upload for this account.
    public func terminate(id: String, account: Account) async throws -> ResumableUpload? {
        await settled(id)
        guard let upload = try await store.terminateUpload(id: id, accountId: account.id, now: now) else { return nil }
        if upload.state == .receiving {
            running.withLock { $0[id]?.stop }?()
            await staging.remove(id: id)
        }
        return upload
    }

    /// Expired uploads' bytes deleted, their rows marked expired; finished rows older than a week
    /// deleted; staged files of uploads no longer receiving removed. Returns how many expired.
    @discardableResult
    public func sweep() async -> Int {
        await settleAll()
        var expired = 0
        let now = self.now
        do {
            for upload in try await store.expiredUploads(now: now, limit: 500)
            where try await store.expireUpload(id: upload.id, now: now) {
                await staging.remove(id: upload.id)
                expired += 1
            }
            _ = try await store.purgeFinishedUploads(before: now.addingTimeInterval(-7 * 86400))
            let local = staging.stagedIDs()
            let live = try await store.receivingUploadIDs(local)
            for id in local where !live.contains(id) {
                // Created a moment ago and not yet recorded? Rows are written right after the file.
                let path = staging.path(id)
                let modified =
                    (try? FileManager.default.attributesOfItem(atPath: path))?[.modificationDate] as? Date ?? now
                if Date().timeIntervalSince(modified) > 60 { await staging.remove(id: id) }  // the file's clock
            }
            if let parts = staging.parts {
                let stored = try await parts.storedIDs()
                let liveParts = try await store.receivingUploadIDs(Array(stored))
                for id in stored where !liveParts.contains(id) {
                    if let row = try await store.upload(id: id), row.state == .receiving { continue }
                    await parts.remove(id: id, logger: logger)
                }
            }
        } catch {
            logger.error("resumable upload sweep failed", metadata: ["error": "\(error)"])
        }
        if expired > 0 { logger.info("expired resumable uploads deleted", metadata: ["uploads": "\(expired)"]) }
        return expired
    }
}
