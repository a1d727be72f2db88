import Foundation

public enum EntitlementState: String, Codable, Sendable { case active, grace, expired, revoked }

/// A subscription as the service knows it: one row per App Store originalTransactionId (or an
/// operator's grant), bound to the account that owns it.
public struct Subscription: Codable, Sendable, Equatable {
        public var originalTransactionId: String
    /// Nil until an account presents it (a notification can arrive first).
    public var accountId: String?
    public var productId: String
    public var expiresAt: Date?
    public var gracePeriodExpiresAt: Date?
    public var state: EntitlementState
    /// The newest Apple signing time applied: anything signed earlier never rolls this back.
    public var lastSignedDate: Date
    public var environment: String
    /// app | notification | admin
    public var source: String
    public var updatedAt: Date
    /// When it was revoked (Apple's refund or revoke, a revoked transaction, an operator). While
    /// set, the revocation sticks: later transactions and renewals of this original transaction
    /// do not reinstate it; only Apple's REFUND_REVERSED or an operator's `grant-pro` lift it.
    public var revokedAt: Date?

    public init(
        originalTransactionId: String, accountId: String?, productId: String, expiresAt: Date?,
        gracePeriodExpiresAt: Date? = nil, state: EntitlementState, lastSignedDate: Date, environment: String,
        source: String, updatedAt: Date, revokedAt: Date? = nil
    ) {
        self.originalTransactionId = originalTransactionId; self.accountId = accountId; self.productId = productId
        self.expiresAt = expiresAt; self.gracePeriodExpiresAt = gracePeriodExpiresAt; self.state = state
        self.lastSignedDate = lastSignedDate; self.environment = environment; self.source = source;
        self.updatedAt = updatedAt
        self.revokedAt = revokedAt
    }

    /// Apple's test environments: TestFlight and App Review buy in "Sandbox", Xcode builds in
    /// "Xcode". Their subscriptions grant pro only to tester accounts (or to everyone with
    /// `appStore.sandboxForAll`).
    public static let testEnvironments: Set<String> = ["Sandbox", "Xcode", "LocalTesting"]
    public var isTestPurchase: Bool { Self.testEnvironments.contains(environment) }

    /// The state at `now`: an active subscription past its expiry, or a grace period past its end,
    /// has expired.
    public func effectiveState(at now: Date) -> EntitlementState {
        switch state {
        case .active: return (expiresAt.map { $0 > now } ?? false) ? .active : .expired
        case .grace: return (gracePeriodExpiresAt.map { $0 > now } ?? false) ? .grace : .expired
        case .expired, .revoked: return state
        }
    }
}

/// What an account is entitled to now.
public struct Entitlement: Sendable, Equatable {
    public var subscription: Subscription?
    public var state: EntitlementState?
    public var grantsPro: Bool { state == .active || state == .grace }
    /// When access ends (the grace period's end while in grace).
    public var expiresAt: Date? { state == .grace ? subscription?.gracePeriodExpiresAt : subscription?.expiresAt }
}

/// A recorded App Store notification (idempotency by its UUID).
public struct StoreNotification: Codable, Sendable {
    public var notificationUUID: String
    public var notificationType: String
    public var subtype: String?
    public var originalTransactionId: String?
    public var signedDate: Date
    public var receivedAt: Date
    /// False when it changed nothing (older than what was applied, or a type Moments ignores).
    public var applied: Bool
}

/// Why a subscription could not be attached to the caller's account.
public enum SubscriptionRefusal: Error, Sendable, Equatable {
    case belongsToAnotherAccount
}

/// What a signed transaction says (already verified by the caller).
public struct TransactionFacts: Sendable {
    public var originalTransactionId: String
    public var productId: String
    public var expiresAt: Date?
    public var revoked: Bool
    public var appAccountToken: String?
    public var environment: String
    public var signedDate: Date

    public init(
        originalTransactionId: String, productId: String, expiresAt: Date?, revoked: Bool, appAccountToken: String?,
        environment: String, signedDate: Date
    ) {
        self.originalTransactionId = originalTransactionId; self.productId = productId; self.expiresAt = expiresAt
        self.revoked = revoked; self.appAccountToken = appAccountToken; self.environment = environment;
        self.signedDate = signedDate
    }
}

/// How a notification changes the subscription.
public enum NotificationEffect: Sendable, Equatable {
    case extend  // SUBSCRIBED, DID_RENEW, RENEWAL_EXTENDED
    case reinstate  // REFUND_REVERSED
    case grace(until: Date?)  // DID_FAIL_TO_RENEW / GRACE_PERIOD
    case expire  // EXPIRED, GRACE_PERIOD_EXPIRED
    case revoke  // REFUND, REVOKE
    case none  // recorded only
}

/// The rules of a subscription's state, written once for both engines.
extension Subscription {
    /// A transaction's news merged in: revocation sticks; a later expiry extends (and ends a grace
    /// period); an earlier one never shortens it.
    public mutating func merge(expiresAt newExpiry: Date?, revoked: Bool, now: Date) {
        if revoked {
            state = .revoked
            revokedAt = revokedAt ?? now
            return
        }
        if revokedAt != nil {
            // Revoked: the expiry is remembered, the state is not reinstated.
            state = .revoked
            expiresAt = [expiresAt, newExpiry].compactMap { $0 }.max()
            return
        }
        let latest = [expiresAt, newExpiry].compactMap { $0 }.max()
        if let latest, latest > (expiresAt ?? .distantPast) || state == .revoked || state == .expired {
            expiresAt = latest
            if latest > now {
                state = .active
                gracePeriodExpiresAt = nil
            } else if state != .grace {
                state = .expired
            }
        }
    }

    /// A notification's effect on the subscription's state (the caller has checked it is newer than
    /// what was applied and not blocked by a sticky revocation).
    public mutating func apply(_ effect: NotificationEffect, tx: TransactionFacts, now: Date) {
        switch effect {
        case .extend:
            state = .active
            expiresAt = [expiresAt, tx.expiresAt].compactMap { $0 }.max()
            gracePeriodExpiresAt = nil
        case .reinstate:
            // Apple reversed the refund: the one thing (besides an operator) that lifts a revocation.
            state = (tx.expiresAt.map { $0 > now } ?? false) ? .active : .expired
            expiresAt = tx.expiresAt
            revokedAt = nil
        case .grace(let until):
            state = .grace
            gracePeriodExpiresAt = until
        case .expire:
            state = .expired
        case .revoke:
            state = .revoked
            revokedAt = revokedAt ?? now
        case .none:
            break
        }
    }
}

extension Subscription {
    /// A verified transaction the app sent for `accountId`, applied to the stored subscription
    /// (nil: none yet). Ownership: a transaction whose appAccountToken is this account moves the
    /// subscription here when it is at least as new as what was applied; without a token, the
    /// subscription belongs to the first account that presented it. State: merged (`merge`).
    public static func applying(_ tx: TransactionFacts, to existing: Subscription?, accountId: String, now: Date)
        -> Result<Subscription, SubscriptionRefusal>
    {
        if let owner = existing?.accountId, owner != accountId {
            guard tx.appAccountToken == accountId, let current = existing, tx.signedDate >= current.lastSignedDate
            else {
                return .failure(.belongsToAnotherAccount)
            }
        }
        var sub =
            existing
            ?? Subscription(
                originalTransactionId: tx.originalTransactionId, accountId: accountId, productId: tx.productId,
                expiresAt: nil, state: .expired, lastSignedDate: .distantPast,
                environment: tx.environment, source: "app", updatedAt: now)
        sub.accountId = accountId
        sub.updatedAt = now
        if tx.signedDate >= sub.lastSignedDate {
            sub.merge(expiresAt: tx.expiresAt, revoked: tx.revoked, now: now)
            sub.productId = tx.productId
            sub.environment = tx.environment
            sub.lastSignedDate = tx.signedDate
            sub.source = "app"
        }
        return .success(sub)
    }
}
