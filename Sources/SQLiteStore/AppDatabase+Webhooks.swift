import Foundation
import GRDB
import Store

extension AppDatabase {
    static func registerWebhookMigration(_ migrator: inout DatabaseMigrator) {
        migrator.registerMigration("v8 webhooks") { db in
            try db.create(table: "webhook_endpoint") { t in
                t.primaryKey("accountId", .text).references("account", onDelete: .cascade)
                t.column("url", .text).notNull()
                t.column("secret", .text).notNull()
                t.column("createdAt", .datetime).notNull()
                t.column("rotatedAt", .datetime)
            }
            try db.create(table: "webhook_delivery") { t in
                t.primaryKey("id", .text)
                t.column("accountId", .text).notNull().references("account", onDelete: .cascade)
                t.column("jobId", .text).notNull()
                t.column("eventType", .text).notNull()
                t.column("payload", .text).notNull()
                t.column("status", .text).notNull()
                t.column("attempts", .integer).notNull().defaults(to: 0)
                t.column("nextAttemptAt", .datetime)
                t.column("createdAt", .datetime).notNull()
                t.column("deliveredAt", .datetime)
                t.column("lastStatusCode", .integer)
                t.column("lastError", .text)
                t.column("leaseOwner", .text)
                t.column("leaseExpiresAt", .datetime)
            }
            try db.create(index: "webhook_delivery_due", on: "webhook_delivery", columns: ["status", "nextAttemptAt"])
            try db.create(index: "webhook_delivery_job", on: "webhook_delivery", columns: ["jobId", "createdAt"])
            try db.create(table: "webhook_attempt") { t in
                t.autoIncrementedPrimaryKey("id")
                t.column("deliveryId", .text).notNull().references("webhook_delivery", onDelete: .cascade)
                t.column("number", .integer).notNull()
                t.column("at", .datetime).notNull()
                t.column("statusCode", .integer)
                t.column("error", .text)
                t.column("durationMs", .integer).notNull()
            }
            try db.create(index: "webhook_attempt_delivery", on: "webhook_attempt", columns: ["deliveryId", "number"])
        }
    }

    /// Inside a transaction that just moved `job` to a final state: writes its webhook to the
    /// outbox when its account has an endpoint. True when one was written.
    @discardableResult
    static func enqueueWebhook(_ db: Database, job: Job, now: Date) throws -> Bool {
        guard let type = WebhookEventType(job.status),
            try Bool.fetchOne(db, sql: "SELECT 1 FROM webhook_endpoint WHERE accountId = ?", arguments: [job.accountId])
                == true
        else { return false }
        let id = "whd_" + UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: "")
        let payload = try WebhookPayload(deliveryId: id, job: job, type: type, now: now).json()
        try db.execute(
            sql: """
                INSERT INTO webhook_delivery (id, accountId, jobId, eventType, payload, status, attempts, nextAttemptAt, createdAt)
                VALUES (?, ?, ?, ?, ?, 'pending', 0, ?, ?)
                """, arguments: [id, job.accountId, job.id, type.rawValue, payload, now, now])
        return true
    }

    public func webhookEndpoint(accountId: String) async throws -> WebhookEndpoint? {
        try await writer.read { db in
            try Row.fetchOne(db, sql: "SELECT * FROM webhook_endpoint WHERE accountId = ?", arguments: [accountId]).map(
                Self.endpoint)
        }
    }

    public func setWebhookEndpoint(accountId: String, url: String, secret: String, now: Date) async throws
        -> WebhookEndpoint
    {
        try await writer.write { db in
            try db.execute(
                sql: """
                    INSERT INTO webhook_endpoint (accountId, url, secret, createdAt) VALUES (?, ?, ?, ?)
                    ON CONFLICT(accountId) DO UPDATE SET url = excluded.url, secret = excluded.secret, rotatedAt = excluded.createdAt
                    """, arguments: [accountId, url, secret, now])
            return try Self.endpoint(
                try Row.fetchOne(db, sql: "SELECT * FROM webhook_endpoint WHERE accountId = ?", arguments: [accountId])!
            )
        }
    }

    public func deleteWebhookEndpoint(accountId: String) async throws -> Bool {
        try await writer.write { db in
            try db.execute(sql: "DELETE FROM webhook_endpoint WHERE accountId = ?", arguments: [accountId])
            return db.changesCount > 0
        }
    }

    public func claimDueWebhooks(worker: String, leaseSeconds: Double, limit: Int, failingLimit: Int, now: Date)
        async throws -> [ClaimedWebhook]
    {
        try await writer.write { db in
            // The oldest due delivery of each account none of whose deliveries is leased now; of
            // those of accounts whose endpoint is failing (a pending delivery already attempted),
            // the first `failingLimit` only.
            let rows = try Row.fetchAll(
                db,
                sql: """
                    WITH failing AS (
                        SELECT DISTINCT accountId FROM webhook_delivery WHERE status = 'pending' AND attempts > 0
                    ), first AS (
                        SELECT d.*, d.rowid AS position, d.accountId IN (SELECT accountId FROM failing) AS failing,
                            ROW_NUMBER() OVER (PARTITION BY d.accountId ORDER BY d.nextAttemptAt, d.rowid) AS accountRank
                        FROM webhook_delivery d
                        WHERE d.status = 'pending' AND d.nextAttemptAt <= ?
                        AND d.accountId NOT IN (SELECT accountId FROM webhook_delivery WHERE status = 'pending' AND leaseExpiresAt >= ?)
                    ), lanes AS (
                        SELECT *, ROW_NUMBER() OVER (PARTITION BY failing ORDER BY nextAttemptAt, position) AS laneRank
                        FROM first WHERE accountRank = 1
                    )
                    SELECT * FROM lanes WHERE NOT failing OR laneRank <= ? ORDER BY nextAttemptAt, position LIMIT ?
                    """, arguments: [now, now, max(0, failingLimit), limit])
            var claimed: [ClaimedWebhook] = []
            let expires = now.addingTimeInterval(leaseSeconds)
            for row in rows {
                var delivery = try Self.delivery(row)
                try db.execute(
                    sql: "UPDATE webhook_delivery SET leaseOwner = ?, leaseExpiresAt = ? WHERE id = ?",
                    arguments: [worker, expires, delivery.id])
                delivery.leaseOwner = worker
                delivery.leaseExpiresAt = expires
                let endpoint = try Row.fetchOne(
                    db, sql: "SELECT * FROM webhook_endpoint WHERE accountId = ?",
                    arguments: [delivery.accountId]
                ).map(Self.endpoint)
                claimed.append(ClaimedWebhook(delivery: delivery, endpoint: endpoint, failing: row["failing"]))
            }
            return claimed
        }
    }

    @discardableResult
    public func recordWebhookAttempt(_ attempt: WebhookAttempt, worker: String, outcome: WebhookOutcome, now: Date)
        async throws -> Bool
    {
        try await writer.write { db in
            guard
                try Bool.fetchOne(
                    db,
                    sql: """
                        SELECT 1 FROM webhook_delivery WHERE id = ? AND status = 'pending' AND leaseOwner = ?
                        """, arguments: [attempt.deliveryId, worker]) == true
            else { return false }
            try db.execute(
                sql: """
                    INSERT INTO webhook_attempt (deliveryId, number, at, statusCode, error, durationMs) VALUES (?, ?, ?, ?, ?, ?)
                    """,
                arguments: [
                    attempt.deliveryId, attempt.number, attempt.at, attempt.statusCode, attempt.error,
                    attempt.durationMs
                ])
            let (status, next, delivered) = Self.apply(outcome, now: now)
            try db.execute(
                sql: """
                    UPDATE webhook_delivery SET attempts = attempts + 1, status = ?, nextAttemptAt = ?, deliveredAt = ?,
                        lastStatusCode = ?, lastError = ?, leaseOwner = NULL, leaseExpiresAt = NULL WHERE id = ?
                    """,
                arguments: [status.rawValue, next, delivered, attempt.statusCode, attempt.error, attempt.deliveryId])
            return true
        }
    }

    public func webhookDeliveries(jobId: String, accountId: String) async throws -> [(
        delivery: WebhookDelivery, attempts: [WebhookAttempt]
    )] {
        try await writer.read { db in
            let deliveries = try Row.fetchAll(
                db,
                sql: """
                    SELECT * FROM webhook_delivery WHERE jobId = ? AND accountId = ? ORDER BY createdAt, rowid
                    """, arguments: [jobId, accountId]
            ).map(Self.delivery)
            return try deliveries.map { delivery in
                let attempts = try Row.fetchAll(
                    db, sql: "SELECT * FROM webhook_attempt WHERE deliveryId = ? ORDER BY number, id",
                    arguments: [delivery.id]
                ).map { row in
                    WebhookAttempt(
                        deliveryId: row["deliveryId"], number: row["number"], at: row["at"],
                        statusCode: row["statusCode"],
                        error: row["error"], durationMs: row["durationMs"])
                }
                return (delivery, attempts)
            }
        }
    }

    static func apply(_ outcome: WebhookOutcome, now: Date) -> (WebhookDeliveryStatus, Date?, Date?) {
        switch outcome {
        case .delivered: return (.delivered, nil, now)
        case .retry(let at): return (.pending, at, nil)
        case .gaveUp: return (.failed, nil, nil)
        }
    }

    static func endpoint(_ row: Row) -> WebhookEndpoint {
        WebhookEndpoint(
            accountId: row["accountId"], url: row["url"], secret: row["secret"], createdAt: row["createdAt"],
            rotatedAt: row["rotatedAt"])
    }

    static func delivery(_ row: Row) throws -> WebhookDelivery {
        guard let type = WebhookEventType(rawValue: row["eventType"]),
            let status = WebhookDeliveryStatus(rawValue: row["status"])
        else {
            throw DatabaseError(message: "a webhook delivery row has an unknown type or status")
        }
        return WebhookDelivery(
            id: row["id"], accountId: row["accountId"], jobId: row["jobId"], eventType: type, payload: row["payload"],
            status: status, attempts: row["attempts"], nextAttemptAt: row["nextAttemptAt"], createdAt: row["createdAt"],
            deliveredAt: row["deliveredAt"], lastStatusCode: row["lastStatusCode"], lastError: row["lastError"],
            leaseOwner: row["leaseOwner"], leaseExpiresAt: row["leaseExpiresAt"])
    }
}
