import Foundation
import GRDB
import Store

extension AppDatabase {
    public func keptInputJobs(accountId: String) async throws -> [Job] {
        try await writer.read { db in
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
        try await writer.write { db in
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
        try await writer.write { db in
            try db.execute(
                sql: """
                    UPDATE job SET edit = json_set(edit, '$.inputHeldBy', ?)
                    WHERE accountId = ? AND edit IS NOT NULL AND (id = ? OR json_extract(edit, '$.inputHeldBy') = ?)
                    """, arguments: [to, accountId, from, from])
        }
    }
}
