import Foundation
import Store
import Logging
import PostgresNIO

/// App Store subscriptions (AppDatabase's Subscription.swift, rule for rule). A transaction or a
/// notification about an original transaction takes a transaction-scoped advisory lock on its id
/// first: two processes applying news of the same subscription (even one not stored yet) take
/// turns, as SQLite's single writer makes them.
extension PostgresStore {
    /// What the account's subscriptions entitle it to now; test purchases count only for testers
    /// or with `sandboxForAll`.
    func entitlement(_ accountId: String, now: Date, on connection: PostgresConnection) async throws -> Entitlement {
        var subscriptions = try await connection.rows(
            """
            SELECT \(unescaped: Rows.subscriptionColumns) FROM subscription WHERE "accountId" = \(accountId)
            """, logger: logger
        ).map(Rows.subscription)
        if subscriptions.contains(where: \.isTestPurchase) {
            let tester =
                try await connection.rows("SELECT tester FROM account WHERE id = \(accountId)", logger: logger)
                .first?.decode(Bool.self) ?? false
            if !(sandboxForAll || tester) { subscriptions.removeAll(where: \.isTestPurchase) }
        }
        let rank: [EntitlementState: Int] = [.active: 3, .grace: 2, .expired: 1, .revoked: 0]
        let best = subscriptions.max { a, b in
            let ra = rank[a.effectiveState(at: now)]!, rb = rank[b.effectiveState(at: now)]!
            return ra != rb ? ra < rb : (a.expiresAt ?? .distantPast) < (b.expiresAt ?? .distantPast)
        }
        return Entitlement.of(best, state: best?.effectiveState(at: now))
    }

    public func entitlement(accountId: String, now: Date) async throws -> Entitlement {
        try await client.withConnection { connection in try await entitlement(accountId, now: now, on: connection) }
    }

    public func applyTransaction(_ tx: TransactionFacts, accountId: String, now: Date) async throws -> Result<
        Entitlement, SubscriptionRefusal
    > {
        try await transaction { connection -> Result<Entitlement, SubscriptionRefusal> in
            let existing = try await lockedSubscription(tx.originalTransactionId, on: connection)
            guard case .success(let sub) = Subscription.applying(tx, to: existing, accountId: accountId, now: now)
            else {
                return .failure(.belongsToAnotherAccount)
            }
            try await Rows.save(sub, on: connection, logger: logger)
            return .success(try await entitlement(accountId, now: now, on: connection))
        }
    }

    public func applyNotification(
        uuid: String, type: String, subtype: String?, signedDate: Date, tx: TransactionFacts?,
        effect: NotificationEffect, now: Date
    ) async throws -> Bool {
        try await transaction { connection -> Bool in
            // Claims the UUID first: a second delivery of the same notification (from any process)
            // waits for this transaction and then finds it recorded.
            let fresh = try await connection.run(
                """
                INSERT INTO app_store_notification ("notificationUUID", "notificationType", subtype, "originalTransactionId",
                    "signedDate", "receivedAt", applied)
                VALUES (\(uuid), \(type), \(subtype), \(tx?.originalTransactionId), \(signedDate), \(now), false)
                ON CONFLICT ("notificationUUID") DO NOTHING RETURNING 1
                """, logger: logger)
            guard fresh > 0 else { return false }
            var applied = false
            if let tx, effect != .none {
                var sub = try await lockedSubscription(tx.originalTransactionId, on: connection)
                var stored = sub != nil
                if sub == nil {
                    let owner = try await tx.appAccountToken.asyncFlatMap { token in
                        try await connection.rows(
                            "SELECT id FROM account WHERE id = \(token.lowercased())", logger: logger
                        )
                        .first?.decode(String.self)
                    }
                    sub = Subscription(
                        originalTransactionId: tx.originalTransactionId, accountId: owner, productId: tx.productId,
                        expiresAt: tx.expiresAt, state: .expired, lastSignedDate: .distantPast,
                        environment: tx.environment, source: "notification", updatedAt: now)
                }
                let sticky = sub?.revokedAt != nil && effect != .revoke && effect != .reinstate
                if var s = sub, signedDate >= s.lastSignedDate, !sticky {
                    if let token = tx.appAccountToken,
                        let owner = try await connection.rows(
                            "SELECT id FROM account WHERE id = \(token.lowercased())", logger: logger
                        )
                        .first?.decode(String.self)
                    {
                        s.accountId = owner
                    }
                    s.apply(effect, tx: tx, now: now)
                    s.productId = tx.productId
                    s.lastSignedDate = signedDate
                    s.source = "notification"
                    s.updatedAt = now
                    try await Rows.save(s, on: connection, logger: logger)
                    stored = true
                    applied = true
                }
                if !stored, let s = sub { try await Rows.save(s, on: connection, logger: logger) }
            }
            if applied {
                try await connection.run(
                    "UPDATE app_store_notification SET applied = true WHERE \"notificationUUID\" = \(uuid)",
                    logger: logger)
            }
            return applied
        }
    }

    public func grantPro(accountId: String, until: Date, now: Date) async throws {
        try await transaction { connection in
            try await connection.run(
                "UPDATE subscription SET \"revokedAt\" = NULL WHERE \"accountId\" = \(accountId)", logger: logger)
            try await Rows.save(
                Subscription(
                    originalTransactionId: "admin:\(accountId)", accountId: accountId, productId: "admin-grant",
                    expiresAt: until, state: .active, lastSignedDate: now, environment: "admin", source: "admin",
                    updatedAt: now), on: connection, logger: logger)
        }
    }

    public func revokeSubscriptions(accountId: String, now: Date) async throws -> Int {
        try await rows(
            """
            UPDATE subscription SET state = 'revoked', "updatedAt" = \(now), "lastSignedDate" = GREATEST("lastSignedDate", \(now)),
                "revokedAt" = COALESCE("revokedAt", \(now)) WHERE "accountId" = \(accountId) RETURNING 1
            """
        ).count
    }

    public func subscriptions(accountId: String) async throws -> [Subscription] {
        try await rows(
            "SELECT \(unescaped: Rows.subscriptionColumns) FROM subscription WHERE \"accountId\" = \(accountId)"
        )
        .map(Rows.subscription)
    }

    /// The subscription of `originalTransactionId`, with the advisory lock on that id held for the
    /// rest of the transaction (whether the row exists or not).
    func lockedSubscription(_ originalTransactionId: String, on connection: PostgresConnection) async throws
        -> Subscription?
    {
        try await connection.run(
            "SELECT pg_advisory_xact_lock(hashtextextended(\("subscription:" + originalTransactionId), 0))",
            logger: logger)
        return try await connection.rows(
            """
            SELECT \(unescaped: Rows.subscriptionColumns) FROM subscription WHERE "originalTransactionId" = \(originalTransactionId) FOR UPDATE
            """, logger: logger
        ).first.map(Rows.subscription)
    }
}

extension Optional {
    func asyncFlatMap<U>(_ transform: (Wrapped) async throws -> U?) async rethrows -> U? {
        guard let value = self else { return nil }
        return try await transform(value)
    }
}
