import Foundation
import Store
import Logging
import PostgresNIO

/// Push devices and the push outbox (AppDatabase+Push.swift on SQLite). Dispatchers in any number
/// of processes claim due pushes with `FOR UPDATE SKIP LOCKED` and a lease; pushes are written in
/// the transaction of the job's end, with a NOTIFY delivered on commit.
extension PostgresStore {
    static let pushChannel = "moments_pushes"

    static let pushColumns = #"""
        id, "accountId", "jobId", token, environment, payload, status, attempts, "nextAttemptAt", "createdAt", "sentAt",
        "lastStatusCode", "lastReason", "leaseOwner", "leaseExpiresAt"
        """#

    static let deviceColumns = #"token, "accountId", environment, "createdAt", "updatedAt""#

    /// Inside the transaction that moved `job` to a final state: one push per device of its account
    /// when it completed or failed (and dispatchers everywhere hear of it on commit).
    static func enqueuePushes(_ job: Job, now: Date, on connection: PostgresConnection, logger: Logger) async throws {
        guard let payload = try PushPayload(job: job)?.json() else { return }
        let devices = try await connection.rows(
            """
            SELECT token, environment FROM push_device WHERE "accountId" = \(job.accountId) ORDER BY "createdAt", token
            """, logger: logger)
        for device in devices {
            let (token, environment) = try device.decode((String, String).self)
            try await connection.run(
                """
                INSERT INTO push_delivery (id, "accountId", "jobId", token, environment, payload, status, attempts, "nextAttemptAt", "createdAt")
                VALUES (\("psh_" + UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: "")), \(job.accountId), \(job.id),
                        \(token), \(environment), \(payload), 'pending', 0, \(now), \(now))
                """, logger: logger)
        }
        if !devices.isEmpty { try await connection.run("SELECT pg_notify(\(pushChannel), '')", logger: logger) }
    }

    public func registerDevice(accountId: String, token: String, environment: PushEnvironment, limit: Int, now: Date)
        async throws -> DeviceRegistration
    {
        try await transaction { connection in
            // The account's row serialises its registrations: the cap holds under concurrent PUTs.
            try await connection.run("SELECT id FROM account WHERE id = \(accountId) FOR UPDATE", logger: logger)
            let existing = try await connection.rows(
                """
                SELECT \(unescaped: Self.deviceColumns) FROM push_device WHERE token = \(token) FOR UPDATE
                """, logger: logger
            ).first.map(Self.device)
            if let existing, existing.accountId == accountId {
                try await connection.run(
                    """
                    UPDATE push_device SET environment = \(environment.rawValue), "updatedAt" = \(now) WHERE token = \(token)
                    """, logger: logger)
                return .updated(
                    PushDevice(
                        token: token, accountId: accountId, environment: environment, createdAt: existing.createdAt,
                        updatedAt: now))
            }
            let count =
                try await connection.rows(
                    #"SELECT COUNT(*) FROM push_device WHERE "accountId" = \#(accountId)"#, logger: logger
                )
                .first?.decode(Int.self) ?? 0
            if count >= limit { return .limitReached(limit: limit) }
            if existing != nil {
                // The phone signed in to another account: the previous account's pushes stop here.
                try await Self.removeDevice(
                    token: token, reason: "the device moved to another account", on: connection, logger: logger)
            }
            try await connection.run(
                """
                INSERT INTO push_device (token, "accountId", environment, "createdAt", "updatedAt")
                VALUES (\(token), \(accountId), \(environment.rawValue), \(now), \(now))
                ON CONFLICT (token) DO UPDATE SET "accountId" = excluded."accountId", environment = excluded.environment,
                    "createdAt" = excluded."createdAt", "updatedAt" = excluded."updatedAt"
                """, logger: logger)
            return .created(
                PushDevice(token: token, accountId: accountId, environment: environment, createdAt: now, updatedAt: now)
            )
        }
    }

    public func devices(accountId: String) async throws -> [PushDevice] {
        try await rows(
            """
            SELECT \(unescaped: Self.deviceColumns) FROM push_device WHERE "accountId" = \(accountId) ORDER BY "createdAt", token
            """
        ).map(Self.device)
    }

    public func deleteDevice(accountId: String, token: String, now: Date) async throws -> Bool {
        try await transaction { connection in
            let held = try await connection.run(
                """
                SELECT token FROM push_device WHERE token = \(token) AND "accountId" = \(accountId) FOR UPDATE
                """, logger: logger)
            guard held > 0 else { return false }
            try await Self.removeDevice(token: token, reason: "the device was removed", on: connection, logger: logger)
            return true
        }
    }

    /// Deletes the device and gives up its pending pushes (leased ones too: their record is refused).
    static func removeDevice(token: String, reason: String, on connection: PostgresConnection, logger: Logger)
        async throws
    {
        try await connection.run("DELETE FROM push_device WHERE token = \(token)", logger: logger)
        try await connection.run(
            """
            UPDATE push_delivery SET status = 'failed', "nextAttemptAt" = NULL, "lastReason" = \(reason), "leaseOwner" = NULL,
                "leaseExpiresAt" = NULL
            WHERE token = \(token) AND status = 'pending'
            """, logger: logger)
    }

    public func claimDuePushes(worker: String, leaseSeconds: Double, limit: Int, now: Date) async throws
        -> [PushDelivery]
    {
        let expires = now.addingTimeInterval(leaseSeconds)
        return try await transaction { connection in
            try await connection.rows(
                """
                WITH due AS (
                    SELECT id FROM push_delivery
                    WHERE status = 'pending' AND "nextAttemptAt" <= \(now) AND ("leaseExpiresAt" IS NULL OR "leaseExpiresAt" < \(now))
                    ORDER BY "nextAttemptAt" LIMIT \(limit)
                    FOR UPDATE SKIP LOCKED
                )
                UPDATE push_delivery d SET "leaseOwner" = \(worker), "leaseExpiresAt" = \(expires)
                FROM due WHERE d.id = due.id
                RETURNING d.*
                """, logger: logger
            ).map(Self.pushDelivery)
                .sorted { ($0.nextAttemptAt ?? now) < ($1.nextAttemptAt ?? now) }
        }
    }

    @discardableResult
    public func recordPushAttempt(
        id: String, worker: String, outcome: PushOutcome, statusCode: Int?, reason: String?, now: Date
    ) async throws -> Bool {
        let (status, next, sent): (String, Date?, Date?) =
            switch outcome {
            case .sent: ("sent", nil, now)
            case .retry(let at): ("pending", at, nil)
            case .gaveUp, .deviceGone: ("failed", nil, nil)
            }
        return try await transaction { connection in
            guard
                let token = try await connection.rows(
                    """
                    SELECT token FROM push_delivery WHERE id = \(id) AND status = 'pending' AND "leaseOwner" = \(worker) FOR UPDATE
                    """, logger: logger
                ).first?.decode(String.self)
            else { return false }
            try await connection.run(
                """
                UPDATE push_delivery SET attempts = attempts + 1, status = \(status), "nextAttemptAt" = \(next), "sentAt" = \(sent),
                    "lastStatusCode" = \(statusCode), "lastReason" = \(reason), "leaseOwner" = NULL, "leaseExpiresAt" = NULL
                WHERE id = \(id)
                """, logger: logger)
            if outcome == .deviceGone {
                try await Self.removeDevice(
                    token: token, reason: "APNs no longer knows the device", on: connection, logger: logger)
            }
            return true
        }
    }

    public func pushDeliveries(jobId: String) async throws -> [PushDelivery] {
        try await rows(
            """
            SELECT \(unescaped: Self.pushColumns) FROM push_delivery WHERE "jobId" = \(jobId) ORDER BY "createdAt", seq
            """
        ).map(Self.pushDelivery)
    }

    static func device(_ row: PostgresRow) throws -> PushDevice {
        let r = row.makeRandomAccess()
        guard let environment = PushEnvironment(rawValue: try r["environment"].decode(String.self)) else {
            throw PostgresStoreError.corrupt("a push device row has an unknown environment")
        }
        return PushDevice(
            token: try r["token"].decode(String.self), accountId: try r["accountId"].decode(String.self),
            environment: environment, createdAt: try r["createdAt"].decode(Date.self),
            updatedAt: try r["updatedAt"].decode(Date.self))
    }

    static func pushDelivery(_ row: PostgresRow) throws -> PushDelivery {
        let r = row.makeRandomAccess()
        guard let environment = PushEnvironment(rawValue: try r["environment"].decode(String.self)),
            let status = PushDeliveryStatus(rawValue: try r["status"].decode(String.self))
        else {
            throw PostgresStoreError.corrupt("a push delivery row has an unknown environment or status")
        }
        return PushDelivery(
            id: try r["id"].decode(String.self), accountId: try r["accountId"].decode(String.self),
            jobId: try r["jobId"].decode(String.self), token: try r["token"].decode(String.self),
            environment: environment,
            payload: try r["payload"].decode(String.self), status: status, attempts: try r["attempts"].decode(Int.self),
            nextAttemptAt: try r["nextAttemptAt"].decode(Date?.self), createdAt: try r["createdAt"].decode(Date.self),
            sentAt: try r["sentAt"].decode(Date?.self), lastStatusCode: try r["lastStatusCode"].decode(Int?.self),
            lastReason: try r["lastReason"].decode(String?.self), leaseOwner: try r["leaseOwner"].decode(String?.self),
            leaseExpiresAt: try r["leaseExpiresAt"].decode(Date?.self))
    }
}
