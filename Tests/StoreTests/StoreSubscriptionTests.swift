import Foundation
import Store
import Testing

/// App Store subscriptions on both engines: who owns a transaction, notifications applied once
/// and in order, refunds and their reversal, revocation, grants, sandbox purchases and grace.
@Suite("Store subscriptions on both engines")
struct StoreSubscriptionTests {
    static let t0 = StoreBehaviourTests.t0
    static let month = 30.0 * 86400

    static func tx(
        _ original: String, expires: Date?, signed: Date, token: String? = nil, revoked: Bool = false,
        environment: String = "Production"
    ) -> TransactionFacts {
        TransactionFacts(
            originalTransactionId: original, productId: "pro.monthly", expiresAt: expires, revoked: revoked,
            appAccountToken: token, environment: environment, signedDate: signed)
    }

    @Test(arguments: Engine.allCases)
    func subscriptionsOwnershipMergeAndRevocation(engine: Engine) async throws {
        try await StoreHarness.with(engine) { h in
            let store = h.store
            let (alice, _) = try await store.createAccount(label: "alice", plan: "free", now: Self.t0)
            let (bob, _) = try await store.createAccount(label: "bob", plan: "free", now: Self.t0)
            guard try await Self.ownershipFollowsTheToken(store, alice: alice, bob: bob) else { return }
            try await Self.notificationsApplyOnceAndInOrder(store, bob: bob)
            try await Self.refundRevokesUntilReversed(store, bob: bob)
            try await Self.grantAndOperatorRevoke(store, bob: bob)
            try await Self.sandboxForTestersAndGraceBeforeAnyTransaction(store, alice: alice)
        }
    }

    /// Alice's subscription stays hers until a newer transaction's token names bob. False (an issue
    /// recorded) when the first purchase is refused.
    static func ownershipFollowsTheToken(_ store: any MomentsStore, alice: Account, bob: Account) async throws -> Bool {
        let month = Self.month
        let first = try await store.applyTransaction(
            Self.tx("otx1", expires: Self.t0 + month, signed: Self.t0), accountId: alice.id, now: Self.t0)
        guard case .success(let entitled) = first else { Issue.record("refused: \(first)"); return false }
        #expect(entitled.grantsPro && entitled.expiresAt == Self.t0 + month)
        // Without a token naming bob, alice's subscription stays hers.
        #expect(
            try await store.applyTransaction(
                Self.tx("otx1", expires: Self.t0 + month, signed: Self.t0 + 10), accountId: bob.id,
                now: Self.t0 + 10
            )
            .map(\.state) == .failure(.belongsToAnotherAccount))
        // An older transaction never shortens the expiry.
        _ = try await store.applyTransaction(
            Self.tx("otx1", expires: Self.t0 + 100, signed: Self.t0 + 20), accountId: alice.id, now: Self.t0 + 20)
        #expect(try await store.entitlement(accountId: alice.id, now: Self.t0 + 200).expiresAt == Self.t0 + month)
        // A newer transaction whose token names bob moves it to bob.
        _ = try await store.applyTransaction(
            Self.tx("otx1", expires: Self.t0 + 2 * month, signed: Self.t0 + 30, token: bob.id),
            accountId: bob.id, now: Self.t0 + 30)
        #expect(try await store.subscriptions(accountId: alice.id).isEmpty)
        #expect(try await store.entitlement(accountId: bob.id, now: Self.t0 + 40).expiresAt == Self.t0 + 2 * month)
        return true
    }

    /// Notifications apply once, and never over a later change.
    static func notificationsApplyOnceAndInOrder(_ store: any MomentsStore, bob: Account) async throws {
        let month = Self.month
        // Notifications apply once by UUID.
        let renewal = Self.tx("otx1", expires: Self.t0 + 3 * month, signed: Self.t0 + 50)
        #expect(
            try await store.applyNotification(
                uuid: "n1", type: "DID_RENEW", subtype: nil, signedDate: Self.t0 + 50, tx: renewal,
                effect: .extend, now: Self.t0 + 50))
        #expect(
            try await !store.applyNotification(
                uuid: "n1", type: "DID_RENEW", subtype: nil, signedDate: Self.t0 + 50, tx: renewal,
                effect: .extend, now: Self.t0 + 51))
        #expect(try await store.entitlement(accountId: bob.id, now: Self.t0 + 60).expiresAt == Self.t0 + 3 * month)
        // Signed before the last applied change: recorded, changes nothing.
        #expect(
            try await !store.applyNotification(
                uuid: "n0", type: "EXPIRED", subtype: nil, signedDate: Self.t0 + 40,
                tx: Self.tx("otx1", expires: nil, signed: Self.t0 + 40), effect: .expire, now: Self.t0 + 61))
        #expect(try await store.entitlement(accountId: bob.id, now: Self.t0 + 62).grantsPro)
    }

    /// A refund's revocation sticks against renewals and transactions until Apple reverses it.
    static func refundRevokesUntilReversed(_ store: any MomentsStore, bob: Account) async throws {
        let month = Self.month
        // A refund revokes, and the revocation sticks against later renewals and transactions.
        #expect(
            try await store.applyNotification(
                uuid: "n2", type: "REFUND", subtype: nil, signedDate: Self.t0 + 70,
                tx: Self.tx("otx1", expires: Self.t0 + 3 * month, signed: Self.t0 + 70), effect: .revoke,
                now: Self.t0 + 70))
        #expect(
            try await !store.applyNotification(
                uuid: "n3", type: "DID_RENEW", subtype: nil, signedDate: Self.t0 + 80,
                tx: Self.tx("otx1", expires: Self.t0 + 4 * month, signed: Self.t0 + 80), effect: .extend,
                now: Self.t0 + 80))
        _ = try await store.applyTransaction(
            Self.tx("otx1", expires: Self.t0 + 5 * month, signed: Self.t0 + 90), accountId: bob.id,
            now: Self.t0 + 90)
        let revoked = try await store.entitlement(accountId: bob.id, now: Self.t0 + 100)
        #expect(revoked.state == .revoked && !revoked.grantsPro)

        // Apple's REFUND_REVERSED lifts it.
        #expect(
            try await store.applyNotification(
                uuid: "n4", type: "REFUND_REVERSED", subtype: nil, signedDate: Self.t0 + 100,
                tx: Self.tx("otx1", expires: Self.t0 + 5 * month, signed: Self.t0 + 100), effect: .reinstate,
                now: Self.t0 + 100))
        #expect(try await store.entitlement(accountId: bob.id, now: Self.t0 + 101).state == .active)
        #expect(try await store.revokeSubscriptions(accountId: bob.id, now: Self.t0 + 102) == 1)
        #expect(try await !store.entitlement(accountId: bob.id, now: Self.t0 + 103).grantsPro)
    }

    /// An operator's grant makes the account pro again; an operator's revoke ends every subscription.
    static func grantAndOperatorRevoke(_ store: any MomentsStore, bob: Account) async throws {
        let month = Self.month
        // An operator's grant lifts it (pro until the grant's end).
        try await store.grantPro(accountId: bob.id, until: Self.t0 + 10 * month, now: Self.t0 + 110)
        let granted = try await store.entitlement(accountId: bob.id, now: Self.t0 + 120)
        #expect(granted.grantsPro && granted.subscription?.originalTransactionId == "admin:\(bob.id)")
        #expect(try await store.subscriptions(accountId: bob.id).allSatisfy { $0.revokedAt == nil })
        // An operator's revoke: every subscription of the account.
        #expect(try await store.revokeSubscriptions(accountId: bob.id, now: Self.t0 + 130) == 2)
        #expect(try await !store.entitlement(accountId: bob.id, now: Self.t0 + 140).grantsPro)
    }

    /// Sandbox purchases count for testers only; a notification before any transaction binds by token.
    static func sandboxForTestersAndGraceBeforeAnyTransaction(
        _ store: any MomentsStore, alice: Account
    ) async throws {
        let month = Self.month
        // Sandbox purchases grant pro to testers only.
        _ = try await store.applyTransaction(
            Self.tx("otx2", expires: Self.t0 + month, signed: Self.t0, environment: "Sandbox"),
            accountId: alice.id, now: Self.t0 + 150)
        #expect(try await !store.entitlement(accountId: alice.id, now: Self.t0 + 160).grantsPro)
        try await store.setTester(accountId: alice.id, true)
        #expect(try await store.entitlement(accountId: alice.id, now: Self.t0 + 170).grantsPro)

        // A notification before any transaction: bound to the account its token names; in grace until its end.
        let (carol, _) = try await store.createAccount(label: "carol", plan: "free", now: Self.t0)
        #expect(
            try await store.applyNotification(
                uuid: "n9", type: "DID_FAIL_TO_RENEW", subtype: "GRACE_PERIOD", signedDate: Self.t0 + 200,
                tx: Self.tx("otx3", expires: Self.t0 + 100, signed: Self.t0 + 200, token: carol.id.uppercased()),
                effect: .grace(until: Self.t0 + 86400), now: Self.t0 + 200))
        let grace = try await store.entitlement(accountId: carol.id, now: Self.t0 + 300)
        #expect(grace.state == .grace && grace.expiresAt == Self.t0 + 86400)
        #expect(try await store.entitlement(accountId: carol.id, now: Self.t0 + 86401).state == .expired)
    }
}
