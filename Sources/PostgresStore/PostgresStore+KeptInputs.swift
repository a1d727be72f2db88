import Foundation
import Store
import PostgresNIO

extension PostgresStore {
    public func keptInputJobs(accountId: String) async throws -> [Job] {
        try await rows(
            """
            SELECT \(unescaped: Rows.jobColumns) FROM job WHERE "accountId" = \(accountId) AND status = 'completed' AND "mediaDeletedAt" IS NULL
              AND (edit->>'keepsInput') = 'true' AND (edit->>'inputHeldBy') IS NULL
            ORDER BY "finishedAt", "createdAt", seq
            """
        ).map(Rows.job)
    }

    public func releaseKeptInput(jobId: String, accountId: String) async throws -> [String] {
        try await rows(
            """
            UPDATE job SET edit = jsonb_set(edit, '{keepsInput}', 'false'::jsonb)
            WHERE "accountId" = \(accountId) AND edit IS NOT NULL AND (id = \(jobId) OR (edit->>'inputHeldBy') = \(jobId))
            RETURNING id
            """
        ).map { try $0.decode(String.self) }
    }

    public func moveKeptInput(from: String, to: String, accountId: String) async throws {
        try await execute(
            """
            UPDATE job SET edit = jsonb_set(edit, '{inputHeldBy}', to_jsonb(\(to)::text))
            WHERE "accountId" = \(accountId) AND edit IS NOT NULL AND (id = \(from) OR (edit->>'inputHeldBy') = \(from))
            """)
    }
}
