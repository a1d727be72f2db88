import Foundation
import Store
import Logging
import PostgresNIO

/// Webhook endpoints and the outbox (AppDatabase's Webhooks.swift). Dispatchers in any number of
/// processes claim due deliveries under a transaction-scoped advisory lock, with a lease; an outbox row is
/// written in the transaction of the job's final state change, with a NOTIFY delivered on commit.
extension PostgresStore {
    static let webhookChannel = "moments_webhooks"

    static let deliveryColumns = #"""
        id, "accountId", "jobId", "eventType", payload, status, attempts, "nextAttemptAt", "createdAt", "deliveredAt",
        "lastStatusCode", "lastError", "leaseOwner", "leaseExpiresAt"
        """#

    static let endpointColumns = #""accountId", url, secret, "createdAt", "rotatedAt""#

    /// Inside the transaction that moved `job` to a final state: its webhook goes to the outbox when
    /// its account has an endpoint (and dispatchers everywhere hear of it on commit).
    static func enqueueWebhook(_ job: Job, now: Date, on connection: PostgresConnection, logger: Logger) async throws {
        guard let type = WebhookEventType(job.status) else { return }
        let id = "whd_" + UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: "")
        let payload = try WebhookPayload(deliveryId: id, job: job, type: type, now: now).json()
        let written = try await connection.run(
            """
            INSERT INTO webhook_delivery (id, "accountId", "jobId", "eventType", payload, status, attempts, "nextAttemptAt", "createdAt")
            SELECT \(id), \(job.accountId), \(job.id), \(type.rawValue), \(payload), 'pending', 0, \(now), \(now)
            FROM webhook_endpoint WHERE "accountId" = \(job.accountId)
            RETURNING id
            """, logger: logger)
        if written > 0 { try await connection.run("SELECT pg_notify(\(webhookChannel), '')", logger: logger) }
    }

    public func webhookEndpoint(accountId: String) async throws -> WebhookEndpoint? {
        try await rows(
            "SELECT \(unescaped: Self.endpointColumns) FROM webhook_endpoint WHERE \"accountId\" = \(accountId)"
        )
        .first.map(Self.endpoint)
    }

    public func setWebhookEndpoint(accountId: String, url: String, secret: String, now: Date) async throws
        -> WebhookEndpoint
    {
        guard
            let endpoint = try await rows(
                """
                INSERT INTO webhook_endpoint ("accountId", url, secret, "createdAt") VALUES (\(accountId), \(url), \(secret), \(now))
                ON CONFLICT ("accountId") DO UPDATE SET url = excluded.url, secret = excluded.secret, "rotatedAt" = excluded."createdAt"
                RETURNING \(unescaped: Self.endpointColumns)
                """
            ).first.map(Self.endpoint)
        else { throw PostgresStoreError.corrupt("the webhook endpoint was not written") }
        return endpoint
    }

    public func deleteWebhookEndpoint(accountId: String) async throws -> Bool {
        try await rows("DELETE FROM webhook_endpoint WHERE \"accountId\" = \(accountId) RETURNING \"accountId\"").count
            > 0
    }

    public func claimDueWebhooks(worker: String, leaseSeconds: Double, limit: Int, failingLimit: Int, now: Date)
        async throws -> [ClaimedWebhook]
    {
        let expires = now.addingTimeInterval(leaseSeconds)
        let failingLimit = max(0, failingLimit)
        return try await transaction { connection in
            // Claims are taken one at a time across processes (they are short), so that two
            // dispatchers never lease two deliveries of one account: the oldest due delivery of
            // each account none of whose deliveries is leased now; of those of accounts whose
            // endpoint is failing (a pending delivery already attempted), the first
            // `failingLimit` only.
            try await connection.run(
                "SELECT pg_advisory_xact_lock(hashtextextended('moments:webhook-claims', 0))", logger: logger)
            let rows = try await connection.rows(
                """
                WITH failing AS (
                    SELECT DISTINCT "accountId" FROM webhook_delivery WHERE status = 'pending' AND attempts > 0
                ), first AS (
                    SELECT DISTINCT ON ("accountId") id, "accountId", "nextAttemptAt", seq FROM webhook_delivery
                    WHERE status = 'pending' AND "nextAttemptAt" <= \(now)
                    AND "accountId" NOT IN (
                        SELECT "accountId" FROM webhook_delivery WHERE status = 'pending' AND "leaseExpiresAt" >= \(now))
                    ORDER BY "accountId", "nextAttemptAt", seq
                ), marked AS (
                    SELECT id, "nextAttemptAt", seq, "accountId" IN (SELECT "accountId" FROM failing) AS failing FROM first
                ), lanes AS (
                    SELECT id, "nextAttemptAt", seq, failing,
                        ROW_NUMBER() OVER (PARTITION BY failing ORDER BY "nextAttemptAt", seq) AS "laneRank"
                    FROM marked
                ), due AS (
                    SELECT id, failing FROM lanes WHERE NOT failing OR "laneRank" <= \(failingLimit)
                    ORDER BY "nextAttemptAt", seq LIMIT \(limit)
                )
                UPDATE webhook_delivery d SET "leaseOwner" = \(worker), "leaseExpiresAt" = \(expires)
                FROM due WHERE d.id = due.id
                RETURNING d.*, due.failing AS failing
                """, logger: logger
            )
            let deliveries = try rows.map { row in
                (try Self.delivery(row), try row.makeRandomAccess()["failing"].decode(Bool.self))
            }
            guard !deliveries.isEmpty else { return [] }
            let accounts = Array(Set(deliveries.map(\.0.accountId)))
            let endpoints = try await connection.rows(
                """
                SELECT \(unescaped: Self.endpointColumns) FROM webhook_endpoint WHERE "accountId" = ANY(\(accounts))
                """, logger: logger
            ).map(Self.endpoint)
            let byAccount = Dictionary(endpoints.map { ($0.accountId, $0) }, uniquingKeysWith: { a, _ in a })
            return deliveries.sorted { ($0.0.nextAttemptAt ?? now) < ($1.0.nextAttemptAt ?? now) }
                .map { ClaimedWebhook(delivery: $0.0, endpoint: byAccount[$0.0.accountId], failing: $0.1) }
        }
    }

    @discardableResult
    public func recordWebhookAttempt(_ attempt: WebhookAttempt, worker: String, outcome: WebhookOutcome, now: Date)
        async throws -> Bool
    {
        let (status, next, delivered): (String, Date?, Date?) =
            switch outcome {
            case .delivered: ("delivered", nil, now)
            case .retry(let at): ("pending", at, nil)
            case .gaveUp: ("failed", nil, nil)
            }
        return try await transaction { connection in
            let held = try await connection.run(
                """
                SELECT id FROM webhook_delivery WHERE id = \(attempt.deliveryId) AND status = 'pending' AND "leaseOwner" = \(worker) FOR UPDATE
                """, logger: logger)
            guard held > 0 else { return false }
            try await connection.run(
                """
                INSERT INTO webhook_attempt ("deliveryId", number, at, "statusCode", error, "durationMs")
                VALUES (\(attempt.deliveryId), \(attempt.number), \(attempt.at), \(attempt.statusCode), \(attempt.error), \(attempt.durationMs))
                """, logger: logger)
            try await connection.run(
                """
                UPDATE webhook_delivery SET attempts = attempts + 1, status = \(status), "nextAttemptAt" = \(next),
                    "deliveredAt" = \(delivered), "lastStatusCode" = \(attempt.statusCode), "lastError" = \(attempt.error),
                    "leaseOwner" = NULL, "leaseExpiresAt" = NULL
                WHERE id = \(attempt.deliveryId)
                """, logger: logger)
            return true
        }
    }

    public func webhookDeliveries(jobId: String, accountId: String) async throws -> [(
        delivery: WebhookDelivery, attempts: [WebhookAttempt]
    )] {
        try await transaction { connection in
            try await connection.run("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ", logger: logger)
            let deliveries = try await connection.rows(
                """
                SELECT \(unescaped: Self.deliveryColumns) FROM webhook_delivery
                WHERE "jobId" = \(jobId) AND "accountId" = \(accountId) ORDER BY "createdAt", seq
                """, logger: logger
            ).map(Self.delivery)
            guard !deliveries.isEmpty else { return [] }
            let attempts = try await connection.rows(
                """
                SELECT "deliveryId", number, at, "statusCode", error, "durationMs" FROM webhook_attempt
                WHERE "deliveryId" = ANY(\(deliveries.map(\.id))) ORDER BY number, id
                """, logger: logger
            ).map { row -> WebhookAttempt in
                let r = row.makeRandomAccess()
                return WebhookAttempt(
                    deliveryId: try r["deliveryId"].decode(String.self), number: try r["number"].decode(Int.self),
                    at: try r["at"].decode(Date.self), statusCode: try r["statusCode"].decode(Int?.self),
                    error: try r["error"].decode(String?.self), durationMs: try r["durationMs"].decode(Int.self))
            }
            let byDelivery = Dictionary(grouping: attempts, by: \.deliveryId)
            return deliveries.map { ($0, byDelivery[$0.id] ?? []) }
        }
    }

    static func endpoint(_ row: PostgresRow) throws -> WebhookEndpoint {
        let r = row.makeRandomAccess()
        return WebhookEndpoint(
            accountId: try r["accountId"].decode(String.self), url: try r["url"].decode(String.self),
            secret: try r["secret"].decode(String.self), createdAt: try r["createdAt"].decode(Date.self),
            rotatedAt: try r["rotatedAt"].decode(Date?.self))
    }

    static func delivery(_ row: PostgresRow) throws -> WebhookDelivery {
        let r = row.makeRandomAccess()
        guard let type = WebhookEventType(rawValue: try r["eventType"].decode(String.self)),
            let status = WebhookDeliveryStatus(rawValue: try r["status"].decode(String.self))
        else {
            throw PostgresStoreError.corrupt("a webhook delivery row has an unknown type or status")
        }
        return WebhookDelivery(
            id: try r["id"].decode(String.self), accountId: try r["accountId"].decode(String.self),
            jobId: try r["jobId"].decode(String.self), eventType: type, payload: try r["payload"].decode(String.self),
            status: status, attempts: try r["attempts"].decode(Int.self),
            nextAttemptAt: try r["nextAttemptAt"].decode(Date?.self), createdAt: try r["createdAt"].decode(Date.self),
            deliveredAt: try r["deliveredAt"].decode(Date?.self),
            lastStatusCode: try r["lastStatusCode"].decode(Int?.self),
            lastError: try r["lastError"].decode(String?.self), leaseOwner: try r["leaseOwner"].decode(String?.self),
            leaseExpiresAt: try r["leaseExpiresAt"].decode(Date?.self))
    }
}
