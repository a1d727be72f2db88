import Foundation

// Builders for the store's value types whose memberwise initialisers are internal, so that an
// engine outside this module (SQLiteStore, PostgresStore) can make them from its rows.

extension APIKey {
    public static func stored(
        id: String, accountId: String, hash: String, prefix: String, label: String?, createdAt: Date,
        lastUsedAt: Date?, revokedAt: Date?
    ) -> APIKey {
        APIKey(
            id: id, accountId: accountId, hash: hash, prefix: prefix, label: label, createdAt: createdAt,
            lastUsedAt: lastUsedAt, revokedAt: revokedAt)
    }
}

extension UsageEntry {
    public static func stored(
        id: Int64?, accountId: String, jobId: String, period: String, change: Int, workerSeconds: Double = 0,
        reason: String, createdAt: Date
    ) -> UsageEntry {
        UsageEntry(
            id: id, accountId: accountId, jobId: jobId, period: period, change: change, workerSeconds: workerSeconds,
            reason: reason, createdAt: createdAt)
    }
}

extension Entitlement {
    public static func of(_ subscription: Subscription?, state: EntitlementState?) -> Entitlement {
        Entitlement(subscription: subscription, state: state)
    }
}

extension StoreNotification {
    public static func stored(
        notificationUUID: String, notificationType: String, subtype: String?, originalTransactionId: String?,
        signedDate: Date, receivedAt: Date, applied: Bool
    ) -> StoreNotification {
        StoreNotification(
            notificationUUID: notificationUUID, notificationType: notificationType, subtype: subtype,
            originalTransactionId: originalTransactionId, signedDate: signedDate, receivedAt: receivedAt,
            applied: applied)
    }
}
