import Foundation
import GRDB
import Store

extension AppDatabase {
    /// What the account's subscriptions entitle it to now. Test (sandbox) purchases count only for
    /// tester accounts, or for every account when the database was opened with `sandboxForAll`
    /// (read here through the SQL function `moments_sandbox_for_all()`, since callers inside other
    /// transactions have no AppDatabase at hand).
    static func entitlement(_ db: Database, accountId: String, now: Date) throws -> Entitlement {
        var subscriptions = try Subscription.filter(Column("accountId") == accountId).fetchAll(db)
        if subscriptions.contains(where: \.isTestPurchase) {
            let allowed =
                try Bool.fetchOne(
                    db,
                    sql: "SELECT moments_sandbox_for_all() OR COALESCE((SELECT tester FROM account WHERE id = ?), 0)",
                    arguments: [accountId]) ?? false
            if !allowed { subscriptions.removeAll(where: \.isTestPurchase) }
        }
        let rank: [EntitlementState: Int] = [.active: 3, .grace: 2, .expired: 1, .revoked: 0]
        let best = subscriptions.max { a, b in
            let ra = rank[a.effectiveState(at: now)]!, rb = rank[b.effectiveState(at: now)]!
            return ra != rb ? ra < rb : (a.expiresAt ?? .distantPast) < (b.expiresAt ?? .distantPast)
        }
        return Entitlement.of(best, state: best?.effectiveState(at: now))
    }

    public func entitlement(accountId: String, now: Date) async throws -> Entitlement {
        try await writer.read { db in try Self.entitlement(db, accountId: accountId, now: now) }
    }

    /// Applies a verified transaction the app sent for `accountId`.
    /// - Ownership: a transaction whose appAccountToken is this account (checked by the caller)
    ///   moves the subscription here when it is at least as new as what was applied (the same
    ///   Apple ID resubscribing from another account); without a token, the originalTransactionId
    ///   belongs to the first account that presented it and is refused for any other.
    /// - State: merged, never replaced: the later expiry wins, a grace period stays until a
    ///   renewal or its end, a revocation sticks (even against later-signed transactions and
    ///   renewals of the same original transaction). Anything signed before the last applied
    ///   change (including an operator's revoke) changes nothing but an unbound owner.
    public func applyTransaction(_ tx: TransactionFacts, accountId: String, now: Date) async throws -> Result<
        Entitlement, SubscriptionRefusal
    > {
        try await writer.write { db in
            let existing = try Subscription.fetchOne(db, key: tx.originalTransactionId)
            guard case .success(let sub) = Subscription.applying(tx, to: existing, accountId: accountId, now: now)
            else {
                return .failure(.belongsToAnotherAccount)
            }
            try sub.save(db)
            return .success(try Self.entitlement(db, accountId: accountId, now: now))
        }
    }

    /// Applies a verified notification once (by UUID). A notification signed before the last one
    /// applied to its subscription is recorded but changes nothing, and so is one that would renew,
    /// extend, expire or put in grace a revoked subscription (only REFUND_REVERSED lifts a
    /// revocation). Returns whether it changed the subscription.
    public func applyNotification(
        uuid: String, type: String, subtype: String?, signedDate: Date, tx: TransactionFacts?,
        effect: NotificationEffect, now: Date
    ) async throws -> Bool {
        try await writer.write { db in
            if try StoreNotification.fetchOne(db, key: uuid) != nil { return false }
            var applied = false
            if let tx, effect != .none {
                var sub = try Subscription.fetchOne(db, key: tx.originalTransactionId)
                if sub == nil {
                    // First news of this subscription: bind it to the account named by the token, if any.
                    let owner = try tx.appAccountToken.flatMap { try Account.fetchOne(db, key: $0.lowercased())?.id }
                    sub = Subscription(
                        originalTransactionId: tx.originalTransactionId, accountId: owner, productId: tx.productId,
                        expiresAt: tx.expiresAt, state: .expired, lastSignedDate: .distantPast,
                        environment: tx.environment, source: "notification", updatedAt: now)
                }
                let sticky = sub?.revokedAt != nil && effect != .revoke && effect != .reinstate
                if var s = sub, signedDate >= s.lastSignedDate, !sticky {
                    // A newer payload naming an existing account by its token moves the subscription there.
                    if let token = tx.appAccountToken, let owner = try Account.fetchOne(db, key: token.lowercased()) {
                        s.accountId = owner.id
                    }
                    s.apply(effect, tx: tx, now: now)
                    s.productId = tx.productId
                    s.lastSignedDate = signedDate
                    s.source = "notification"
                    s.updatedAt = now
                    try s.save(db)
                    applied = true
                } else if let s = sub, try Subscription.fetchOne(db, key: s.originalTransactionId) == nil {
                    try s.insert(db)
                }
            }
            try StoreNotification.stored(
                notificationUUID: uuid, notificationType: type, subtype: subtype,
                originalTransactionId: tx?.originalTransactionId, signedDate: signedDate, receivedAt: now,
                applied: applied
            ).insert(db)
            return applied
        }
    }

    /// An operator's grant of pro until `until` (admin CLI). It also lifts the revocation of the
    /// account's App Store subscriptions: they stay revoked until their next transaction or
    /// renewal, which then applies again.
    public func grantPro(accountId: String, until: Date, now: Date) async throws {
        try await writer.write { db in
            try db.execute(sql: "UPDATE subscription SET revokedAt = NULL WHERE accountId = ?", arguments: [accountId])
            try Subscription(
                originalTransactionId: "admin:\(accountId)", accountId: accountId, productId: "admin-grant",
                expiresAt: until, state: .active, lastSignedDate: now, environment: "admin", source: "admin",
                updatedAt: now
            ).save(db)
        }
    }

    /// Revokes every subscription of the account (admin CLI).
    public func revokeSubscriptions(accountId: String, now: Date) async throws -> Int {
        try await writer.write { db in
            // revokedAt makes it stick against later transactions and renewals too; lastSignedDate
            // moves to now, so no notification signed before the revoke applies.
            try db.execute(
                sql: """
                    UPDATE subscription SET state = 'revoked', updatedAt = ?, lastSignedDate = MAX(lastSignedDate, ?),
                        revokedAt = COALESCE(revokedAt, ?) WHERE accountId = ?
                    """, arguments: [now, now, now, accountId])
            return db.changesCount
        }
    }

    public func subscriptions(accountId: String) async throws -> [Subscription] {
        try await writer.read { db in try Subscription.filter(Column("accountId") == accountId).fetchAll(db) }
    }
}
