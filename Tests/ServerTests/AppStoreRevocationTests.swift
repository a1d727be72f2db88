import AppStore
import Foundation
import HummingbirdTesting
import Store
import MomentsConfig
import Testing

/// Sandbox (TestFlight) purchases grant pro only to testers; a revocation of an original
/// transaction sticks until Apple reverses the refund or an operator grants pro.
extension AppStoreTests {
    func sandboxNotification(_ type: String, tx: AppStoreTransaction, signed: Date) async throws -> String {
        let data = AppStoreNotificationPayload.NotificationData(
            bundleId: StoreKitFixtures.bundleId, environment: "Sandbox",
            signedTransactionInfo: try await chain.sign(tx), signedRenewalInfo: nil)
        return try await chain.sign(
            AppStoreNotificationPayload(
                notificationType: type, subtype: nil, notificationUUID: UUID().uuidString,
                data: data, signedDate: signed))
    }

    @Test func sandboxPurchasesGrantProOnlyToTesters() async throws {
        let server = try await TestServer(plans: .init(), appleChain: chain)
        try await withServer(server, .router) { client in
            let (id, key) = try await client.createAccount()
            let sandbox = StoreKitFixtures.transaction(account: id, environment: "Sandbox")
            let refused = try await present(client, key: key, jws: chain.sign(sandbox)).expectProblem(
                .forbidden, code: "sandbox_purchase_not_allowed")
            #expect(refused["environment"] as? String == "Sandbox")
            #expect(try await plan(client, key: key) == ("free", nil))
            // The same purchase by notification is recorded but grants nothing.
            let notified = try await sandboxNotification("SUBSCRIBED", tx: sandbox, signed: Date())
            #expect(try await notify(client, notified).status == .ok)
            #expect(try await plan(client, key: key) == ("free", nil))

            // Marked as a tester: the sandbox purchase grants pro (at once, also the recorded one).
            try await server.service.database.setTester(accountId: id, true)
            #expect(try await plan(client, key: key) == ("pro", "active"))
            #expect(try await present(client, key: key, jws: chain.sign(sandbox)).status == .ok)
            #expect(try await plan(client, key: key) == ("pro", "active"))
            // No longer a tester: sandbox pro ends.
            try await server.service.database.setTester(accountId: id, false)
            #expect(try await plan(client, key: key).0 == "free")
            // Production purchases are unaffected.
            #expect(
                try await present(client, key: key, jws: chain.sign(StoreKitFixtures.transaction(account: id))).status
                    == .ok)
            #expect(try await plan(client, key: key) == ("pro", "active"))
        }
    }

    @Test func sandboxForAllGrantsEveryone() async throws {
        let server = try await TestServer(plans: .init(), appleChain: chain, sandboxForAll: true)
        try await withServer(server, .router) { client in
            let (id, key) = try await client.createAccount()
            let sandbox = StoreKitFixtures.transaction(account: id, environment: "Sandbox")
            #expect(try await present(client, key: key, jws: chain.sign(sandbox)).status == .ok)
            #expect(try await plan(client, key: key) == ("pro", "active"))
        }
    }

    /// An operator's revoke, then a renewal of the same original transaction signed later (by the
    /// app and by Apple): it stays revoked. Apple's REFUND_REVERSED reinstates it.
    @Test func revocationSticksUntilReversed() async throws {
        let server = try await TestServer(plans: .init(), appleChain: chain)
        try await withServer(server, .router) { client in
            let (id, key) = try await client.createAccount()
            let original = UUID().uuidString
            let t0 = Date().addingTimeInterval(-3600)
            func tx(_ offset: Double) -> AppStoreTransaction {
                StoreKitFixtures.transaction(
                    account: id, originalId: original, expires: Date().addingTimeInterval(30 * 86400),
                    signed: t0.addingTimeInterval(offset))
            }
            #expect(try await present(client, key: key, jws: chain.sign(tx(0))).status == .ok)
            #expect(try await plan(client, key: key) == ("pro", "active"))
            _ = try await server.service.database.revokeSubscriptions(accountId: id, now: t0.addingTimeInterval(60))
            #expect(try await plan(client, key: key) == ("free", "revoked"))

            // A later-signed transaction and a later renewal notification: still revoked.
            #expect(try await present(client, key: key, jws: chain.sign(tx(120))).status == .ok)
            #expect(try await plan(client, key: key) == ("free", "revoked"))
            let renewal = try await notification("DID_RENEW", tx: tx(180), signed: t0.addingTimeInterval(180))
            #expect(try await notify(client, renewal).json()["status"] as? String == "recorded")
            #expect(try await plan(client, key: key) == ("free", "revoked"))

            // Apple reverses the refund: reinstated; renewals apply again.
            let reversed = try await notification("REFUND_REVERSED", tx: tx(240), signed: t0.addingTimeInterval(240))
            #expect(try await notify(client, reversed).json()["status"] as? String == "applied")
            #expect(try await plan(client, key: key) == ("pro", "active"))

            // Apple's refund sticks the same way.
            let refund = try await notification("REFUND", tx: tx(300), signed: t0.addingTimeInterval(300))
            #expect(try await notify(client, refund).json()["status"] as? String == "applied")
            let resubscribed = try await notification("SUBSCRIBED", tx: tx(360), signed: t0.addingTimeInterval(360))
            #expect(try await notify(client, resubscribed).json()["status"] as? String == "recorded")
            #expect(try await present(client, key: key, jws: chain.sign(tx(420))).status == .ok)
            #expect(try await plan(client, key: key) == ("free", "revoked"))

            // An operator's grant gives pro and lifts the revocation: the next renewal applies again.
            try await server.service.database.grantPro(
                accountId: id, until: Date().addingTimeInterval(86400), now: Date())
            #expect(try await plan(client, key: key) == ("pro", "active"))
            #expect(try await present(client, key: key, jws: chain.sign(tx(480))).status == .ok)
            let apple = try #require(
                try await server.service.database.subscriptions(accountId: id).first {
                    $0.originalTransactionId == original
                })
            #expect(apple.state == .active && apple.revokedAt == nil)
        }
    }
}

@Suite("App Store settings")
struct AppStoreSettingsTests {
    /// The shipped file holds the defaults (sandbox for testers only); the environment turns it on.
    @Test func sandboxForAllIsConfigurable() async throws {
        let shipped = AppStoreSettings(
            reader: try await MomentsConfiguration.reader(environment: [:], file: "Config/moments.json"))
        #expect(shipped == AppStoreSettings() && !shipped.sandboxForAll)
        let on = AppStoreSettings(
            reader: try await MomentsConfiguration.reader(
                environment: ["APP_STORE_SANDBOX_FOR_ALL": "true"],
                file: "Config/moments.json"))
        #expect(on.sandboxForAll)
    }
}
