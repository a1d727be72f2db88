import Foundation
import GRDB
import Store

extension AppDatabase {
    public func saveFingerprint(_ fingerprint: StoredFingerprint) async throws {
        try await writer.write { db in try fingerprint.save(db) }
    }

    public func reuploadCandidates(accountId: String, excludingJob: String, limit: Int) async throws -> [(
        job: Job, fingerprint: StoredFingerprint
    )] {
        try await writer.read { db in
            let prints = try StoredFingerprint.fetchAll(
                db,
                sql: """
                    SELECT f.* FROM content_fingerprint f JOIN job j ON j.id = f.jobId
                    WHERE f.accountId = ? AND j.accountId = ? AND j.id <> ? AND j.status = 'completed' AND j.mediaDeletedAt IS NULL
                    ORDER BY j.createdAt DESC LIMIT ?
                    """, arguments: [accountId, accountId, excludingJob, max(0, limit)])
            return try prints.compactMap { f in try Job.fetchOne(db, key: f.jobId).map { ($0, f) } }
        }
    }
}
