import Foundation
import MediaVocabulary
import Store
import Logging
import PostgresNIO

/// Rows of the store's tables as the Store types, and back.
enum Rows {
    static let jsonEncoder = JSONEncoder()
    static let jsonDecoder = JSONDecoder()

    static func json<T: Encodable>(_ value: T?) throws -> String? {
        guard let value else { return nil }
        return String(decoding: try jsonEncoder.encode(value), as: UTF8.self)
    }

    static func value<T: Decodable>(_ type: T.Type, json text: String?) throws -> T? {
        guard let text else { return nil }
        return try jsonDecoder.decode(T.self, from: Data(text.utf8))
    }

    // MARK: Job

    /// The job columns, JSON as text (decoded by Foundation, as GRDB does).
    static let jobColumns = #"""
        id, "accountId", status, stage, progress, message, "targetDuration", quality, input::text AS input,
        "estimatedSeconds", attempts, "createdAt", "startedAt", "finishedAt", "updatedAt", "processingSeconds",
        "errorCode", "errorMessage", output::text AS output, segments::text AS segments, "mediaDeletedAt",
        "quotaPeriod", "quotaState", "outputCap", "retentionHours", "maxDurationSeconds", "abnormalExits", "runAfter",
        "workerSeconds", "leaseOwner", "leaseExpiresAt", edit::text AS edit
        """#

    static func job(_ row: PostgresRow) throws -> Job {
        let r = row.makeRandomAccess()
        guard let status = JobState(rawValue: try r["status"].decode(String.self)) else {
            throw PostgresStoreError.corrupt("a job row has an unknown status")
        }
        guard let input = try value(JobInput.self, json: try r["input"].decode(String.self)) else {
            throw PostgresStoreError.corrupt("a job row has no input")
        }
        let storedQuality = try r["quality"].decode(String.self)
        guard let quality = HighlightQuality(rawValue: storedQuality) else {
            throw PostgresStoreError.corrupt("a job row has an unknown quality \(storedQuality.prefix(20))")
        }
        var job = Job(
            id: try r["id"].decode(String.self), accountId: try r["accountId"].decode(String.self),
            targetDuration: try r["targetDuration"].decode(Int.self), quality: quality,
            input: input, estimatedSeconds: try r["estimatedSeconds"].decode(Int.self),
            now: try r["createdAt"].decode(Date.self))
        job.status = status
        job.stage = try r["stage"].decode(String?.self)
        job.progress = try r["progress"].decode(Int.self)
        job.message = try r["message"].decode(String.self)
        job.attempts = try r["attempts"].decode(Int.self)
        job.startedAt = try r["startedAt"].decode(Date?.self)
        job.finishedAt = try r["finishedAt"].decode(Date?.self)
        job.updatedAt = try r["updatedAt"].decode(Date.self)
        job.processingSeconds = try r["processingSeconds"].decode(Double?.self)
        job.errorCode = try r["errorCode"].decode(String?.self)
        job.errorMessage = try r["errorMessage"].decode(String?.self)
        job.output = try value(JobOutput.self, json: try r["output"].decode(String?.self))
        job.segments = try value([Segment].self, json: try r["segments"].decode(String?.self))
        job.mediaDeletedAt = try r["mediaDeletedAt"].decode(Date?.self)
        job.quotaPeriod = try r["quotaPeriod"].decode(String?.self)
        job.quotaState = try r["quotaState"].decode(String?.self)
        job.outputCap = try r["outputCap"].decode(Int?.self)
        job.retentionHours = try r["retentionHours"].decode(Double?.self)
        job.maxDurationSeconds = try r["maxDurationSeconds"].decode(Double?.self)
        job.abnormalExits = try r["abnormalExits"].decode(Int.self)
        job.runAfter = try r["runAfter"].decode(Date?.self)
        job.workerSeconds = try r["workerSeconds"].decode(Double.self)
        job.leaseOwner = try r["leaseOwner"].decode(String?.self)
        job.leaseExpiresAt = try r["leaseExpiresAt"].decode(Date?.self)
        job.edit = try value(JobEdit.self, json: try r["edit"].decode(String?.self))
        return job
    }

    static func insert(_ job: Job, on connection: PostgresConnection, logger: Logger) async throws {
        let input = try json(job.input)!
        let output = try json(job.output), segments = try json(job.segments), edit = try json(job.edit)
        try await connection.run(
            """
            INSERT INTO job (id, "accountId", status, stage, progress, message, "targetDuration", quality, input, "estimatedSeconds",
                attempts, "createdAt", "startedAt", "finishedAt", "updatedAt", "processingSeconds", "errorCode", "errorMessage",
                output, segments, "mediaDeletedAt", "quotaPeriod", "quotaState", "outputCap", "retentionHours", "maxDurationSeconds",
                "abnormalExits", "runAfter", "workerSeconds", "leaseOwner", "leaseExpiresAt", edit)
            VALUES (\(job.id), \(job.accountId), \(job.status.rawValue), \(job.stage), \(job.progress), \(job.message),
                \(job.targetDuration), \(job.quality.rawValue), \(input)::jsonb, \(job.estimatedSeconds), \(job.attempts), \(job.createdAt),
                \(job.startedAt), \(job.finishedAt), \(job.updatedAt), \(job.processingSeconds), \(job.errorCode), \(job.errorMessage),
                \(output)::jsonb, \(segments)::jsonb, \(job.mediaDeletedAt), \(job.quotaPeriod), \(job.quotaState), \(job.outputCap),
                \(job.retentionHours), \(job.maxDurationSeconds), \(job.abnormalExits), \(job.runAfter), \(job.workerSeconds),
                \(job.leaseOwner), \(job.leaseExpiresAt), \(edit)::jsonb)
            """, logger: logger)
    }

    /// Writes every column of `job` (GRDB's `update`): callers lock the row, change the value as
    /// AppDatabase does, then save it.
    static func update(_ job: Job, on connection: PostgresConnection, logger: Logger) async throws {
        let input = try json(job.input)!
        let output = try json(job.output), segments = try json(job.segments), edit = try json(job.edit)
        try await connection.run(
            """
            UPDATE job SET "accountId" = \(job.accountId), status = \(job.status.rawValue), stage = \(job.stage),
                progress = \(job.progress), message = \(job.message), "targetDuration" = \(job.targetDuration),
                quality = \(job.quality.rawValue), input = \(input)::jsonb, "estimatedSeconds" = \(job.estimatedSeconds),
                attempts = \(job.attempts), "createdAt" = \(job.createdAt), "startedAt" = \(job.startedAt),
                "finishedAt" = \(job.finishedAt), "updatedAt" = \(job.updatedAt), "processingSeconds" = \(job.processingSeconds),
                "errorCode" = \(job.errorCode), "errorMessage" = \(job.errorMessage), output = \(output)::jsonb,
                segments = \(segments)::jsonb, "mediaDeletedAt" = \(job.mediaDeletedAt), "quotaPeriod" = \(job.quotaPeriod),
                "quotaState" = \(job.quotaState), "outputCap" = \(job.outputCap), "retentionHours" = \(job.retentionHours),
                "maxDurationSeconds" = \(job.maxDurationSeconds), "abnormalExits" = \(job.abnormalExits),
                "runAfter" = \(job.runAfter), "workerSeconds" = \(job.workerSeconds), "leaseOwner" = \(job.leaseOwner),
                "leaseExpiresAt" = \(job.leaseExpiresAt), edit = \(edit)::jsonb
            WHERE id = \(job.id)
            """, logger: logger)
    }

    /// The job locked for the rest of the transaction, or nil.
    static func lockedJob(id: String, on connection: PostgresConnection, logger: Logger) async throws -> Job? {
        try await connection.rows(
            "SELECT \(unescaped: jobColumns) FROM job WHERE id = \(id) FOR UPDATE", logger: logger
        ).first.map(job)
    }

    // MARK: Account, key, ledger, subscription

    static let accountColumns = #"id, plan, label, "createdAt", "disabledAt", tester"#

    static func account(_ row: PostgresRow) throws -> Account {
        let r = row.makeRandomAccess()
        return Account(
            id: try r["id"].decode(String.self), plan: try r["plan"].decode(String.self),
            label: try r["label"].decode(String?.self), createdAt: try r["createdAt"].decode(Date.self),
            disabledAt: try r["disabledAt"].decode(Date?.self), tester: try r["tester"].decode(Bool.self))
    }

    static let keyColumns = #"id, "accountId", hash, prefix, label, "createdAt", "lastUsedAt", "revokedAt""#

    static func key(_ row: PostgresRow) throws -> APIKey {
        let r = row.makeRandomAccess()
        return APIKey.stored(
            id: try r["id"].decode(String.self), accountId: try r["accountId"].decode(String.self),
            hash: try r["hash"].decode(String.self), prefix: try r["prefix"].decode(String.self),
            label: try r["label"].decode(String?.self), createdAt: try r["createdAt"].decode(Date.self),
            lastUsedAt: try r["lastUsedAt"].decode(Date?.self), revokedAt: try r["revokedAt"].decode(Date?.self))
    }

    static func insert(_ key: APIKey, on connection: PostgresConnection, logger: Logger) async throws {
        try await connection.run(
            """
            INSERT INTO api_key (id, "accountId", hash, prefix, label, "createdAt", "lastUsedAt", "revokedAt")
            VALUES (\(key.id), \(key.accountId), \(key.hash), \(key.prefix), \(key.label), \(key.createdAt), \(key.lastUsedAt), \(key.revokedAt))
            """, logger: logger)
    }

    static let ledgerColumns = #"id, "accountId", "jobId", period, change, "workerSeconds", reason, "createdAt""#

    static func ledgerEntry(_ row: PostgresRow) throws -> UsageEntry {
        let r = row.makeRandomAccess()
        return UsageEntry.stored(
            id: try r["id"].decode(Int64.self), accountId: try r["accountId"].decode(String.self),
            jobId: try r["jobId"].decode(String.self), period: try r["period"].decode(String.self),
            change: try r["change"].decode(Int.self), workerSeconds: try r["workerSeconds"].decode(Double.self),
            reason: try r["reason"].decode(String.self), createdAt: try r["createdAt"].decode(Date.self))
    }

    /// One ledger line (UsageEntry's insert).
    static func addLedgerLine(
        accountId: String, jobId: String, period: String, change: Int, workerSeconds: Double = 0,
        reason: String, now: Date, on connection: PostgresConnection, logger: Logger
    ) async throws {
        try await connection.run(
            """
            INSERT INTO usage_ledger ("accountId", "jobId", period, change, "workerSeconds", reason, "createdAt")
            VALUES (\(accountId), \(jobId), \(period), \(change), \(workerSeconds), \(reason), \(now))
            """, logger: logger)
    }

    static let subscriptionColumns = #"""
        "originalTransactionId", "accountId", "productId", "expiresAt", "gracePeriodExpiresAt", state, "lastSignedDate",
        environment, source, "updatedAt", "revokedAt"
        """#

    static func subscription(_ row: PostgresRow) throws -> Subscription {
        let r = row.makeRandomAccess()
        guard let state = EntitlementState(rawValue: try r["state"].decode(String.self)) else {
            throw PostgresStoreError.corrupt("a subscription row has an unknown state")
        }
        return Subscription(
            originalTransactionId: try r["originalTransactionId"].decode(String.self),
            accountId: try r["accountId"].decode(String?.self), productId: try r["productId"].decode(String.self),
            expiresAt: try r["expiresAt"].decode(Date?.self),
            gracePeriodExpiresAt: try r["gracePeriodExpiresAt"].decode(Date?.self), state: state,
            lastSignedDate: try r["lastSignedDate"].decode(Date.self),
            environment: try r["environment"].decode(String.self),
            source: try r["source"].decode(String.self), updatedAt: try r["updatedAt"].decode(Date.self),
            revokedAt: try r["revokedAt"].decode(Date?.self))
    }

    /// Inserts or replaces the subscription (GRDB's `save`).
    static func save(_ s: Subscription, on connection: PostgresConnection, logger: Logger) async throws {
        try await connection.run(
            """
            INSERT INTO subscription ("originalTransactionId", "accountId", "productId", "expiresAt", "gracePeriodExpiresAt", state,
                "lastSignedDate", environment, source, "updatedAt", "revokedAt")
            VALUES (\(s.originalTransactionId), \(s.accountId), \(s.productId), \(s.expiresAt), \(s.gracePeriodExpiresAt),
                \(s.state.rawValue), \(s.lastSignedDate), \(s.environment), \(s.source), \(s.updatedAt), \(s.revokedAt))
            ON CONFLICT ("originalTransactionId") DO UPDATE SET "accountId" = excluded."accountId", "productId" = excluded."productId",
                "expiresAt" = excluded."expiresAt", "gracePeriodExpiresAt" = excluded."gracePeriodExpiresAt", state = excluded.state,
                "lastSignedDate" = excluded."lastSignedDate", environment = excluded.environment, source = excluded.source,
                "updatedAt" = excluded."updatedAt", "revokedAt" = excluded."revokedAt"
            """, logger: logger)
    }
}
