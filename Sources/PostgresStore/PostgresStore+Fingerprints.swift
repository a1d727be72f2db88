import Foundation
import Store
import PostgresNIO

extension PostgresStore {
    public func saveFingerprint(_ f: StoredFingerprint) async throws {
        try await execute(
            """
            INSERT INTO content_fingerprint ("jobId", "accountId", duration, fingerprint, "createdAt")
            VALUES (\(f.jobId), \(f.accountId), \(f.duration), \(f.fingerprint), \(f.createdAt))
            ON CONFLICT ("jobId") DO UPDATE SET duration = EXCLUDED.duration, fingerprint = EXCLUDED.fingerprint, "createdAt" = EXCLUDED."createdAt"
            """)
    }

    public func reuploadCandidates(accountId: String, excludingJob: String, limit: Int) async throws -> [(
        job: Job, fingerprint: StoredFingerprint
    )] {
        let prints = try await rows(
            """
            SELECT f."jobId", f."accountId", f.duration, f.fingerprint, f."createdAt" FROM content_fingerprint f JOIN job j ON j.id = f."jobId"
            WHERE f."accountId" = \(accountId) AND j."accountId" = \(accountId) AND j.id <> \(excludingJob)
              AND j.status = 'completed' AND j."mediaDeletedAt" IS NULL
            ORDER BY j."createdAt" DESC LIMIT \(max(0, limit))
            """
        ).map { row in
            let r = row.makeRandomAccess()
            return StoredFingerprint(
                jobId: try r["jobId"].decode(String.self), accountId: try r["accountId"].decode(String.self),
                duration: try r["duration"].decode(Double.self), fingerprint: try r["fingerprint"].decode(String.self),
                createdAt: try r["createdAt"].decode(Date.self))
        }
        guard !prints.isEmpty else { return [] }
        let ids = prints.map(\.jobId)
        let jobs = try await rows("SELECT \(unescaped: Rows.jobColumns) FROM job WHERE id = ANY(\(ids))").map(Rows.job)
        let byID = Dictionary(jobs.map { ($0.id, $0) }, uniquingKeysWith: { a, _ in a })
        return prints.compactMap { f in byID[f.jobId].map { ($0, f) } }
    }
}
