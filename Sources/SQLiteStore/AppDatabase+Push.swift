import Foundation
import GRDB
import Store

/// Push devices and the push outbox on SQLite (the PostgreSQL twin is PostgresStore+Push.swift).
extension AppDatabase {
    static func registerPushMigration(_ migrator: inout DatabaseMigrator) {
        migrator.registerMigration("v12 push devices and outbox") { db in
            try db.create(table: "push_device") { t in
                t.primaryKey("token", .text)
                t.column("accountId", .text).notNull().references("account", onDelete: .cascade)
                t.column("environment", .text).notNull()
                t.column("createdAt", .datetime).notNull()
                t.column("updatedAt", .datetime).notNull()
            }
            try db.create(index: "push_device_account", on: "push_device", columns: ["accountId", "createdAt"])
            try db.create(table: "push_delivery") { t in
                t.primaryKey("id", .text)
                t.column("accountId", .text).notNull().references("account", onDelete: .cascade)
                t.column("jobId", .text).notNull()
                t.column("token", .text).notNull()
                t.column("environment", .text).notNull()
                t.column("payload", .text).notNull()
                t.column("status", .text).notNull()
                t.column("attempts", .integer).notNull().defaults(to: 0)
                t.column("nextAttemptAt", .datetime)
                t.column("createdAt", .datetime).notNull()
                t.column("sentAt", .datetime)
                t.column("lastStatusCode", .integer)
                t.column("lastReason", .text)
                t.column("leaseOwner", .text)
                t.column("leaseExpiresAt", .datetime)
            }
            try db.create(index: "push_delivery_due", on: "push_delivery", columns: ["status", "nextAttemptAt"])
            try db.create(index: "push_delivery_job", on: "push_delivery", columns: ["jobId", "createdAt"])
            try db.create(index: "push_delivery_token", on: "push_delivery", columns: ["token", "status"])
        }
    }

    /// Inside a transaction that just moved `job` to a final state: one push per device of its
    /// account when the job completed or failed. True when any was written.
    @discardableResult
    static func enqueuePushes(_ db: Database, job: Job, now: Date) throws -> Bool {
        guard let payload = try PushPayload(job: job)?.json() else { return false }
        let devices = try Row.fetchAll(
            db, sql: "SELECT token, environment FROM push_device WHERE accountId = ? ORDER BY createdAt",
            arguments: [job.accountId])
        for device in devices {
            try db.execute(
                sql: """
                    INSERT INTO push_delivery (id, accountId, jobId, token, environment, payload, status, attempts, nextAttemptAt, createdAt)
                    VALUES (?, ?, ?, ?, ?, ?, 'pending', 0, ?, ?)
                    """,
                arguments: [
                    PushDelivery.newID(), job.accountId, job.id, device["token"] as String,
                    device["environment"] as String,
                    payload, now, now
                ])
        }
        return !devices.isEmpty
    }

    public func registerDevice(accountId: String, token: String, environment: PushEnvironment, limit: Int, now: Date)
        async throws -> DeviceRegistration
    {
        try await writer.write { db in
            let existing = try Row.fetchOne(db, sql: "SELECT * FROM push_device WHERE token = ?", arguments: [token])
                .map(Self.device)
            if let existing, existing.accountId == accountId {
                try db.execute(
                    sql: "UPDATE push_device SET environment = ?, updatedAt = ? WHERE token = ?",
                    arguments: [environment.rawValue, now, token])
                return .updated(
                    PushDevice(
                        token: token, accountId: accountId, environment: environment, createdAt: existing.createdAt,
                        updatedAt: now))
            }
            let count =
                try Int.fetchOne(
                    db, sql: "SELECT COUNT(*) FROM push_device WHERE accountId = ?", arguments: [accountId]) ?? 0
            if count >= limit { return .limitReached(limit: limit) }
            if existing != nil {
                // The phone signed in to another account: the previous account's pushes stop here.
                try Self.removeDevice(db, token: token, reason: "the device moved to another account")
            }
            try db.execute(
                sql:
                    "INSERT INTO push_device (token, accountId, environment, createdAt, updatedAt) VALUES (?, ?, ?, ?, ?)",
                arguments: [token, accountId, environment.rawValue, now, now])
            return .created(
                PushDevice(token: token, accountId: accountId, environment: environment, createdAt: now, updatedAt: now)
            )
        }
    }

    public func devices(accountId: String) async throws -> [PushDevice] {
        try await writer.read { db in
            try Row.fetchAll(
                db, sql: "SELECT * FROM push_device WHERE accountId = ? ORDER BY createdAt, rowid",
                arguments: [accountId]
            )
            .map(Self.device)
        }
    }

    public func deleteDevice(accountId: String, token: String, now: Date) async throws -> Bool {
        try await writer.write { db in
            guard
                try Bool.fetchOne(
                    db, sql: "SELECT 1 FROM push_device WHERE token = ? AND accountId = ?",
                    arguments: [token, accountId]) == true
            else { return false }
            try Self.removeDevice(db, token: token, reason: "the device was removed")
            return true
        }
    }

    /// Deletes the device and gives up its pending pushes (leased ones too: their record is refused).
    static func removeDevice(_ db: Database, token: String, reason: String) throws {
        try db.execute(sql: "DELETE FROM push_device WHERE token = ?", arguments: [token])
        try db.execute(
            sql: """
                UPDATE push_delivery SET status = 'failed', nextAttemptAt = NULL, lastReason = ?, leaseOwner = NULL, leaseExpiresAt = NULL
                WHERE token = ? AND status = 'pending'
                """, arguments: [reason, token])
    }

    public func claimDuePushes(worker: String, leaseSeconds: Double, limit: Int, now: Date) async throws
        -> [PushDelivery]
    {
        try await writer.write { db in
            let rows = try Row.fetchAll(
                db,
                sql: """
                    SELECT * FROM push_delivery WHERE status = 'pending' AND nextAttemptAt <= ?
                    AND (leaseExpiresAt IS NULL OR leaseExpiresAt < ?) ORDER BY nextAttemptAt LIMIT ?
                    """, arguments: [now, now, limit])
            let expires = now.addingTimeInterval(leaseSeconds)
            return try rows.map { row in
                var delivery = try Self.pushDelivery(row)
                try db.execute(
                    sql: "UPDATE push_delivery SET leaseOwner = ?, leaseExpiresAt = ? WHERE id = ?",
                    arguments: [worker, expires, delivery.id])
                delivery.leaseOwner = worker
                delivery.leaseExpiresAt = expires
                return delivery
            }
        }
    }

    @discardableResult
    public func recordPushAttempt(
        id: String, worker: String, outcome: PushOutcome, statusCode: Int?, reason: String?, now: Date
    ) async throws -> Bool {
        try await writer.write { db in
            guard
                let token = try String.fetchOne(
                    db,
                    sql: """
                        SELECT token FROM push_delivery WHERE id = ? AND status = 'pending' AND leaseOwner = ?
                        """, arguments: [id, worker])
            else { return false }
            let (status, next, sent) = Self.apply(outcome, now: now)
            try db.execute(
                sql: """
                    UPDATE push_delivery SET attempts = attempts + 1, status = ?, nextAttemptAt = ?, sentAt = ?, lastStatusCode = ?,
                        lastReason = ?, leaseOwner = NULL, leaseExpiresAt = NULL WHERE id = ?
                    """, arguments: [status.rawValue, next, sent, statusCode, reason, id])
            if outcome == .deviceGone {
                try Self.removeDevice(db, token: token, reason: "APNs no longer knows the device")  // not for users: the delivery record
            }
            return true
        }
    }

    public func pushDeliveries(jobId: String) async throws -> [PushDelivery] {
        try await writer.read { db in
            try Row.fetchAll(
                db, sql: "SELECT * FROM push_delivery WHERE jobId = ? ORDER BY createdAt, rowid", arguments: [jobId]
            )
            .map(Self.pushDelivery)
        }
    }

    static func apply(_ outcome: PushOutcome, now: Date) -> (PushDeliveryStatus, Date?, Date?) {
        switch outcome {
        case .sent: return (.sent, nil, now)
        case .retry(let at): return (.pending, at, nil)
        case .gaveUp, .deviceGone: return (.failed, nil, nil)
        }
    }

    static func device(_ row: Row) throws -> PushDevice {
        guard let environment = PushEnvironment(rawValue: row["environment"]) else {
            throw DatabaseError(message: "a push device row has an unknown environment")
        }
        return PushDevice(
            token: row["token"], accountId: row["accountId"], environment: environment, createdAt: row["createdAt"],
            updatedAt: row["updatedAt"])
    }

    static func pushDelivery(_ row: Row) throws -> PushDelivery {
        guard let environment = PushEnvironment(rawValue: row["environment"]),
            let status = PushDeliveryStatus(rawValue: row["status"])
        else {
            throw DatabaseError(message: "a push delivery row has an unknown environment or status")
        }
        return PushDelivery(
            id: row["id"], accountId: row["accountId"], jobId: row["jobId"], token: row["token"],
            environment: environment,
            payload: row["payload"], status: status, attempts: row["attempts"], nextAttemptAt: row["nextAttemptAt"],
            createdAt: row["createdAt"], sentAt: row["sentAt"], lastStatusCode: row["lastStatusCode"],
            lastReason: row["lastReason"], leaseOwner: row["leaseOwner"], leaseExpiresAt: row["leaseExpiresAt"])
    }
}
