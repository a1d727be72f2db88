import Foundation

// Public memberwise initialisers for the store's value types, so that an engine outside this
// module (PostgresStore) can build them from its rows.

extension APIKey {
    public init(id: String, accountId: String, hash: String, prefix: String, label: String?, createdAt: Date,
                lastUsedAt: Date?, revokedAt: Date?) {
        self.id = id; self.accountId = accountId; self.hash = hash; self.prefix = prefix; self.label = label
        self.createdAt = createdAt; self.lastUsedAt = lastUsedAt; self.revokedAt = revokedAt
    }
}

extension UsageEntry {
    public init(id: Int64?, accountId: String, jobId: String, period: String, change: Int, workerSeconds: Double = 0,
                reason: String, createdAt: Date) {
        self.id = id; self.accountId = accountId; self.jobId = jobId; self.period = period; self.change = change
        self.workerSeconds = workerSeconds; self.reason = reason; self.createdAt = createdAt
    }
}

extension Entitlement {
    public init(subscription: Subscription?, state: EntitlementState?) {
        self.subscription = subscription; self.state = state
    }
}
