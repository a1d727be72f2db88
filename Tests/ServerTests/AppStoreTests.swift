import AppStore
import Foundation
import HTTPTypes
import HummingbirdTesting
import JWTKit
import Store
import NIOCore
import Testing

/// StoreKit 2 transactions and App Store Server Notifications, signed by a test chain shaped like
/// Apple's (P-256, made here), verified by the server against that chain's root.
@Suite("App Store subscriptions")
struct AppStoreTests {
    let chain: TestAppleChain

    init() throws { chain = try TestAppleChain() }

    func present(_ client: some TestClientProtocol, key: String, jws: String) async throws -> TestResponse {
        let body = try JSONSerialization.data(withJSONObject: ["signed_transaction": jws])
        return try await client.executeRequest(
            uri: "/api/v1/subscriptions/apple", method: .post,
            headers: [.authorization: "Bearer \(key)", .contentType: "application/json"],
            body: ByteBuffer(bytes: body))
    }

    func notify(_ client: some TestClientProtocol, _ jws: String) async throws -> TestResponse {
        let body = try JSONSerialization.data(withJSONObject: ["signedPayload": jws])
        return try await client.executeRequest(
            uri: "/api/v1/webhooks/app-store", method: .post,
            headers: [.contentType: "application/json"], body: ByteBuffer(bytes: body))
    }

    func plan(_ client: some TestClientProtocol, key: String) async throws -> (String, String?) {
        let account = try await client.get("/api/v1/account", key: key).json()
        return (account["plan"] as? String ?? "?", (account["entitlement"] as? [String: Any])?["state"] as? String)
    }

    @Test func verifiedTransactionGrantsPro() async throws {
        let server = try await TestServer(plans: .init(), appleChain: chain)
        try await withServer(server, .router) { client in
            let (id, key) = try await client.createAccount()
            #expect(try await plan(client, key: key).0 == "free")
            let expires = Date().addingTimeInterval(30 * 86400)
            let jws = try await chain.sign(StoreKitFixtures.transaction(account: id.uppercased(), expires: expires))
            let response = try await present(client, key: key, jws: jws)
            #expect(response.status == .ok, "\(response.text)")
            let account = try response.json()
            #expect(account["plan"] as? String == "pro")
            let entitlement = try #require(account["entitlement"] as? [String: Any])
            #expect(
                entitlement["state"] as? String == "active"
                    && entitlement["product_id"] as? String == "com.moments.pro.monthly")
            #expect((account["usage"] as? [String: Any])?["limit"] is NSNull)
            #expect((account["limits"] as? [String: Any])?["max_output_side"] as? Int == 2160)
            // A pro job may render up to 2160p and is kept 30 days; its unit does not cap anything.
            let upload = try await client.upload(
                key: key, file: try await Fixtures.data(.tiny), fields: [("target_duration", "5")])
            #expect(upload.status == .ok, "\(upload.text)")
            #expect((try upload.json()["quota"] as? [String: Any])?["remaining"] is NSNull)
            let jobID = try #require(try upload.json()["job_id"] as? String)
            let job = try #require(try await server.service.database.job(id: jobID))
            #expect(job.outputCap == 2160 && job.retentionHours == 720)
            _ = try await client.get("/api/v1/jobs/\(job.id)", key: key, method: .delete)
        }
    }

    @Test func refusedTransactions() async throws {
        let server = try await TestServer(plans: .init(), appleChain: chain)
        let now = Date()
        let expiredLeaf = try TestAppleChain(
            leafValidity: now.addingTimeInterval(-3 * 365 * 86400)...now.addingTimeInterval(-365 * 86400))
        let otherRoot = try TestAppleChain()
        let noMarkers = try TestAppleChain(markers: false)
        try await withServer(server, .router) { client in
            let (id, key) = try await client.createAccount()
            let valid = StoreKitFixtures.transaction(account: id)
            // The expired and no-marker chains share nothing with the configured root either, so
            // give them this server's root by re-signing is impossible: each fails on its own count.
            let cases: [(String, String)] = [
                ("expired leaf", try await expiredLeaf.sign(valid)),
                ("wrong root", try await otherRoot.sign(valid)),
                ("no Apple markers", try await noMarkers.sign(valid)),
                (
                    "wrong bundle id",
                    try await chain.sign(StoreKitFixtures.transaction(account: id, bundleId: "com.example.other"))
                ),
                (
                    "Xcode environment",
                    try await chain.sign(StoreKitFixtures.transaction(account: id, environment: "Xcode"))
                ),
                ("tampered payload", try await tamper(chain.sign(valid))),
                ("not a JWS", "hello")
            ]
            for (name, jws) in cases {
                let response = try await present(client, key: key, jws: jws)
                let problem = try response.expectProblem(.unprocessableContent, code: "invalid_signed_transaction")
                #expect(problem["reason"] != nil, "\(name)")
            }
            #expect(try await plan(client, key: key).0 == "free")
        }
    }

    /// A leaf that expired before the payload was signed fails even with the right root; one valid
    /// at signedDate passes even when it has expired since (validation at signedDate).
    @Test func validationHappensAtSignedDate() async throws {
        let now = Date()
        let oldLeaf = try TestAppleChain(
            leafValidity: now.addingTimeInterval(-3 * 365 * 86400)...now.addingTimeInterval(-365 * 86400))
        let server = try await TestServer(plans: .init(), appleChain: oldLeaf)
        try await withServer(server, .router) { client in
            let (id, key) = try await client.createAccount()
            let signedWhileValid = StoreKitFixtures.transaction(
                account: id, expires: now.addingTimeInterval(86400),
                signed: now.addingTimeInterval(-2 * 365 * 86400))
            #expect(try await present(client, key: key, jws: oldLeaf.sign(signedWhileValid)).status == .ok)
            let signedAfterExpiry = StoreKitFixtures.transaction(account: id, signed: now)
            try await present(client, key: key, jws: oldLeaf.sign(signedAfterExpiry)).expectProblem(
                .unprocessableContent, code: "invalid_signed_transaction")
        }
    }

    @Test func ownershipAndRevocation() async throws {
        let server = try await TestServer(plans: .init(), appleChain: chain)
        try await withServer(server, .router) { client in
            let (alice, aliceKey) = try await client.createAccount()
            let (_, bobKey) = try await client.createAccount()
            // Another account's token.
            let forAlice = try await chain.sign(StoreKitFixtures.transaction(account: alice))
            try await present(client, key: bobKey, jws: forAlice).expectProblem(
                .forbidden, code: "transaction_for_another_account")
            #expect(try await plan(client, key: bobKey).0 == "free")
            // Without a token: bound to the first account that presents it, refused for any other.
            let original = UUID().uuidString
            let unbound = try await chain.sign(StoreKitFixtures.transaction(account: nil, originalId: original))
            #expect(try await present(client, key: bobKey, jws: unbound).status == .ok)
            #expect(try await plan(client, key: bobKey).0 == "pro")
            try await present(client, key: aliceKey, jws: unbound).expectProblem(
                .forbidden, code: "transaction_for_another_account")
            // A revoked transaction grants nothing.
            let revoked = try await chain.sign(StoreKitFixtures.transaction(account: alice, revoked: Date()))
            #expect(try await present(client, key: aliceKey, jws: revoked).status == .ok)
            #expect(try await plan(client, key: aliceKey) == ("free", "revoked"))
            // Another product grants nothing either.
            let other = try await chain.sign(
                StoreKitFixtures.transaction(account: alice, product: "com.moments.stickers"))
            try await present(client, key: aliceKey, jws: other).expectProblem(
                .unprocessableContent, code: "unknown_product")
        }
    }

    func notification(
        _ type: String, subtype: String? = nil, uuid: String = UUID().uuidString, tx: AppStoreTransaction,
        grace: Date? = nil, signed: Date
    ) async throws -> String {
        let renewal = try await chain.sign(
            AppStoreRenewalInfo(
                originalTransactionId: tx.originalTransactionId, gracePeriodExpiresDate: grace,
                environment: "Production", signedDate: signed))
        let data = AppStoreNotificationPayload.NotificationData(
            bundleId: StoreKitFixtures.bundleId, environment: "Production",
            signedTransactionInfo: try await chain.sign(tx), signedRenewalInfo: renewal)
        return try await chain.sign(
            AppStoreNotificationPayload(
                notificationType: type, subtype: subtype, notificationUUID: uuid,
                data: data, signedDate: signed))
    }

    @Test func notificationsKeepTheEntitlementCurrent() async throws {
        let server = try await TestServer(plans: .init(), appleChain: chain)
        try await withServer(server, .router) { client in
            let (id, key) = try await client.createAccount()
            let original = UUID().uuidString
            let t0 = Date().addingTimeInterval(-600)
            func tx(_ offset: Double, expires: Double) -> AppStoreTransaction {
                StoreKitFixtures.transaction(
                    account: id, originalId: original, expires: t0.addingTimeInterval(expires),
                    signed: t0.addingTimeInterval(offset))
            }
            // SUBSCRIBED, then the same notification again (Apple retries): applied once.
            let subscribed = try await notification(
                "SUBSCRIBED", subtype: "INITIAL_BUY", uuid: "n-1", tx: tx(0, expires: 30 * 86400), signed: t0)
            #expect(try await notify(client, subscribed).json()["status"] as? String == "applied")
            #expect(try await notify(client, subscribed).json()["status"] as? String == "recorded")
            #expect(try await plan(client, key: key) == ("pro", "active"))

            // Billing trouble with a grace period: still pro until the grace period ends.
            let graceEnd = Date().addingTimeInterval(3 * 86400)
            let failed = try await notification(
                "DID_FAIL_TO_RENEW", subtype: "GRACE_PERIOD", tx: tx(60, expires: 120), grace: graceEnd,
                signed: t0.addingTimeInterval(60))
            #expect(try await notify(client, failed).status == .ok)
            let account = try await client.get("/api/v1/account", key: key).json()
            #expect(account["plan"] as? String == "pro")
            let entitlement = try #require(account["entitlement"] as? [String: Any])
            #expect(entitlement["state"] as? String == "grace")
            #expect(entitlement["expires_at"] as? String == ISO8601DateFormatter().string(from: graceEnd))

            // A renewal, then an older EXPIRED arriving late: no rollback.
            let renewed = try await notification(
                "DID_RENEW", tx: tx(180, expires: 60 * 86400), signed: t0.addingTimeInterval(180))
            #expect(try await notify(client, renewed).json()["status"] as? String == "applied")
            let lateExpired = try await notification(
                "EXPIRED", subtype: "VOLUNTARY", tx: tx(120, expires: 120), signed: t0.addingTimeInterval(120))
            #expect(try await notify(client, lateExpired).json()["status"] as? String == "recorded")
            #expect(try await plan(client, key: key) == ("pro", "active"))

            // GRACE_PERIOD_EXPIRED and EXPIRED end it; a refund revokes it.
            let expired = try await notification(
                "EXPIRED", subtype: "BILLING_RETRY", tx: tx(240, expires: 200), signed: t0.addingTimeInterval(240))
            #expect(try await notify(client, expired).json()["status"] as? String == "applied")
            #expect(try await plan(client, key: key) == ("free", "expired"))
            let resubscribed = try await notification(
                "SUBSCRIBED", subtype: "RESUBSCRIBE", tx: tx(300, expires: 30 * 86400),
                signed: t0.addingTimeInterval(300))
            _ = try await notify(client, resubscribed)
            #expect(try await plan(client, key: key) == ("pro", "active"))
            let refund = try await notification(
                "REFUND", tx: tx(360, expires: 30 * 86400), signed: t0.addingTimeInterval(360))
            #expect(try await notify(client, refund).json()["status"] as? String == "applied")
            #expect(try await plan(client, key: key) == ("free", "revoked"))

            // Unverifiable payloads are refused, not acknowledged.
            try await notify(
                client,
                try await TestAppleChain().sign(
                    AppStoreNotificationPayload(
                        notificationType: "SUBSCRIBED", subtype: nil, notificationUUID: UUID().uuidString, data: nil,
                        signedDate: Date()))
            )
            .expectProblem(.unprocessableContent, code: "invalid_signed_notification")
        }
    }

    @Test func graceExpiresWithTheClock() async throws {
        let server = try await TestServer(plans: .init(), appleChain: chain)
        try await withServer(server, .router) { client in
            let (id, key) = try await client.createAccount()
            let t0 = Date().addingTimeInterval(-60)
            let tx = StoreKitFixtures.transaction(account: id, expires: t0, signed: t0)
            let failing = try await notification(
                "DID_FAIL_TO_RENEW", subtype: "GRACE_PERIOD", tx: tx, grace: Date().addingTimeInterval(-1), signed: t0)
            _ = try await notify(client, failing)
            #expect(try await plan(client, key: key) == ("free", "expired"))
        }
    }

    /// The review's cases: a date from the future, the app posting during a grace period, an
    /// operator's revoke that a client re-post must not undo, a resubscription from another account,
    /// and a genuine notification for another environment.
    @Test func mergingAndOwnershipEdgeCases() async throws {
        let server = try await TestServer(plans: .init(), appleChain: chain)
        try await withServer(server, .router) { client in
            let (alice, aliceKey) = try await client.createAccount()
            let (bob, bobKey) = try await client.createAccount()
            let future = StoreKitFixtures.transaction(account: alice, signed: Date().addingTimeInterval(3600))
            try await present(client, key: aliceKey, jws: chain.sign(future)).expectProblem(
                .unprocessableContent, code: "invalid_signed_transaction")

            // Grace: the notification puts Alice in grace; the app then posts the lapsed transaction.
            let original = UUID().uuidString
            let t0 = Date().addingTimeInterval(-600)
            let lapsed = StoreKitFixtures.transaction(account: alice, originalId: original, expires: t0, signed: t0)
            let grace = try await notification(
                "DID_FAIL_TO_RENEW", subtype: "GRACE_PERIOD", tx: lapsed,
                grace: Date().addingTimeInterval(86400), signed: t0.addingTimeInterval(60))
            _ = try await notify(client, grace)
            #expect(try await plan(client, key: aliceKey) == ("pro", "grace"))
            let posted = StoreKitFixtures.transaction(
                account: alice, originalId: original, expires: t0, signed: t0.addingTimeInterval(120))
            #expect(try await present(client, key: aliceKey, jws: chain.sign(posted)).status == .ok)
            #expect(try await plan(client, key: aliceKey) == ("pro", "grace"))

            // An operator's revoke sticks against a re-post of an earlier-signed transaction.
            let renewed = StoreKitFixtures.transaction(
                account: alice, originalId: original, signed: Date().addingTimeInterval(-30))
            #expect(try await present(client, key: aliceKey, jws: chain.sign(renewed)).status == .ok)
            #expect(try await plan(client, key: aliceKey) == ("pro", "active"))
            _ = try await server.service.database.revokeSubscriptions(accountId: alice, now: Date())
            _ = try await present(client, key: aliceKey, jws: chain.sign(renewed))
            #expect(try await plan(client, key: aliceKey) == ("free", "revoked"))

            // The same Apple ID resubscribes from Bob's account (his token, signed later): it moves to
            // Bob, still revoked (a revocation sticks per original transaction until Apple reverses
            // it or an operator grants pro).
            let resubscribed = StoreKitFixtures.transaction(account: bob, originalId: original, signed: Date())
            #expect(try await present(client, key: bobKey, jws: chain.sign(resubscribed)).status == .ok)
            #expect(try await plan(client, key: bobKey) == ("free", "revoked"))
            #expect(try await plan(client, key: aliceKey).0 == "free")
            try await server.service.database.grantPro(
                accountId: bob, until: Date().addingTimeInterval(86400), now: Date())
            #expect(try await present(client, key: bobKey, jws: chain.sign(resubscribed)).status == .ok)
            #expect(try await plan(client, key: bobKey) == ("pro", "active"))

            // Apple's genuine notification for another environment: acknowledged, ignored.
            var xcode = StoreKitFixtures.transaction(account: bob, originalId: original, signed: Date())
            xcode.environment = "Xcode"
            let data = AppStoreNotificationPayload.NotificationData(
                bundleId: StoreKitFixtures.bundleId, environment: "Xcode",
                signedTransactionInfo: try await chain.sign(xcode), signedRenewalInfo: nil)
            let other = try await chain.sign(
                AppStoreNotificationPayload(
                    notificationType: "REFUND", subtype: nil,
                    notificationUUID: UUID().uuidString, data: data, signedDate: Date()))
            let acknowledged = try await notify(client, other)
            let acknowledgement = try acknowledged.json()["status"] as? String
            #expect(acknowledged.status == .ok && acknowledgement == "ignored")
            #expect(try await plan(client, key: bobKey) == ("pro", "active"))
        }
    }

    @Test func unconfiguredServerFailsClosed() async throws {
        let server = try await TestServer(plans: .init())
        try await withServer(server, .router) { client in
            let (id, key) = try await client.createAccount()
            let jws = try await chain.sign(StoreKitFixtures.transaction(account: id))
            try await present(client, key: key, jws: jws).expectProblem(
                .serviceUnavailable, code: "app_store_unavailable")
            try await notify(client, jws).expectProblem(.serviceUnavailable, code: "app_store_unavailable")
        }
    }

    /// Flips one character of the payload part (the signature no longer matches).
    func tamper(_ jws: String) -> String {
        var parts = jws.split(separator: ".").map(String.init)
        var payload = Data(base64URL: parts[1])!
        let text = String(decoding: payload, as: UTF8.self).replacingOccurrences(
            of: "com.moments.pro.monthly", with: "com.moments.pro.yearly!")
        payload = Data(text.utf8)
        parts[1] = payload.base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(
            of: "/", with: "_"
        )
        .replacingOccurrences(of: "=", with: "")
        return parts.joined(separator: ".")
    }
}

extension Data {
    init?(base64URL text: String) {
        var base64 = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while base64.count % 4 != 0 { base64 += "=" }
        self.init(base64Encoded: base64)
    }
}
