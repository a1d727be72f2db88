import Foundation
import GRDB

/// Uploaded videos kept after their highlight for re-cuts (`edit.keepsInput`), per account: what
/// counts against the plan's kept-input allowance, releasing them early, and one copy kept for a
/// recognised re-upload of the same video (`edit.inputHeldBy`).
public protocol KeptInputRepository: Sendable {
    /// The account's completed jobs whose own input is kept (media not deleted, `keepsInput`, not
    /// held by another job), oldest first (by finish, then creation).
    func keptInputJobs(accountId: String) async throws -> [Job]
    /// The job's input is no longer kept (nor that of the jobs whose input it held): `keepsInput`
    /// false on each. Returns their ids.
    @discardableResult
    func releaseKeptInput(jobId: String, accountId: String) async throws -> [String]
    /// Job `from`'s kept input is job `to`'s from now on (and so is every input `from` held).
    func moveKeptInput(from: String, to: String, accountId: String) async throws
}

extension AppDatabase {
    public func keptInputJobs(accountId: String) async throws -> [Job] {
        try await pool.read { db in
            try Job.fetchAll(
                db,
                sql: """
                    SELECT * FROM job WHERE accountId = ? AND status = 'completed' AND mediaDeletedAt IS NULL
                      AND json_extract(edit, '$.keepsInput') = 1 AND json_extract(edit, '$.inputHeldBy') IS NULL
                    ORDER BY finishedAt, createdAt
                    """, arguments: [accountId])
        }
    }

    public func releaseKeptInput(jobId: String, accountId: String) async throws -> [String] {
        try await pool.write { db in
            let ids = try String.fetchAll(
                db,
                sql: """
                    SELECT id FROM job WHERE accountId = ? AND edit IS NOT NULL AND (id = ? OR json_extract(edit, '$.inputHeldBy') = ?)
                    """, arguments: [accountId, jobId, jobId])
            for id in ids {
                try db.execute(
                    sql: "UPDATE job SET edit = json_set(edit, '$.keepsInput', json('false')) WHERE id = ?",
                    arguments: [id])
            }
            return ids
        }
    }

    public func moveKeptInput(from: String, to: String, accountId: String) async throws {
        try await pool.write { db in
            try db.execute(
                sql: """
                    UPDATE job SET edit = json_set(edit, '$.inputHeldBy', ?)
                    WHERE accountId = ? AND edit IS NOT NULL AND (id = ? OR json_extract(edit, '$.inputHeldBy') = ?)
                    """, arguments: [to, accountId, from, from])
        }
    }
}
