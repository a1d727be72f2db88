import Crypto
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Store
import Logging
import MomentsConfig
import Synchronization
import Testing

/// The account's webhook endpoint: registering, rotating the secret, removing it, the targets
/// refused, and whose delivery log one may read.
@Suite("Webhook endpoint")
struct WebhookEndpointTests {
    static func server(workers: Int = 1) async throws -> TestServer {
        try await WebhookTests.server(workers: workers)
    }

    static func register(_ client: any TestClientProtocol, key: String, url: String) async throws -> TestResponse {
        try await WebhookTests.register(client, key: key, url: url)
    }

    /// PUT registers and shows the secret once; GET shows the URL only; PUT again rotates the
    /// secret; DELETE removes it.
    @Test func endpointLifecycle() async throws {
        let server = try await Self.server(workers: 0)
        try await withServer(server, .router) { client in
            let (_, key) = try await client.createAccount()
            try await client.get("/api/v1/account/webhook", key: key).expectProblem(
                .notFound, code: "webhook_not_found")
            let first = try await Self.register(client, key: key, url: "http://127.0.0.1:9/hook")
            #expect(first.status == .ok)
            let created = try first.json()
            #expect(Set(created.keys) == ["url", "secret", "created_at", "rotated_at", "message"], "\(created)")
            #expect(created["url"] as? String == "http://127.0.0.1:9/hook" && created["rotated_at"] is NSNull)
            let shown = try await client.get("/api/v1/account/webhook", key: key).json()
            #expect(shown["url"] as? String == "http://127.0.0.1:9/hook" && shown["secret"] == nil)
            let rotated = try await Self.register(client, key: key, url: "http://127.0.0.1:9/other").json()
            #expect(rotated["secret"] as? String != created["secret"] as? String)
            #expect(rotated["rotated_at"] is String && rotated["url"] as? String == "http://127.0.0.1:9/other")
            #expect(try await client.get("/api/v1/account/webhook", key: key, method: .delete).status == .noContent)
            try await client.get("/api/v1/account/webhook", key: key).expectProblem(
                .notFound, code: "webhook_not_found")
            try await client.get("/api/v1/account/webhook", key: key, method: .delete).expectProblem(.notFound)
            try await client.get("/api/v1/account/webhook", key: nil).expectProblem(.unauthorized)
            try await client.executeRequest(
                uri: "/api/v1/account/webhook", method: .put,
                headers: [.authorization: "Bearer \(key)"], body: ByteBuffer(string: #"{"uri": "x"}"#)
            )
            .expectProblem(.badRequest, code: "unknown_field")
        }
    }

    /// Without `webhooks.allowPrivateTargets`: loopback, private, link-local and unspecified
    /// targets are refused at registration with a 400 that says why, and so is plain http.
    @Test func privateTargetsAreRefused() async throws {
        let server = try await TestServer { s in s.workers = 0 }
        #expect(server.service.settings.webhooks.allowPrivateTargets == false)
        try await withServer(server, .router) { client in
            let (_, key) = try await client.createAccount()
            for url in [
                "https://127.0.0.1/hook", "https://10.1.2.3/", "https://172.16.0.1/",
                "https://192.168.1.10/", "https://100.64.0.1/", "https://169.254.169.254/latest/meta-data",
                "https://[::1]/hook", "https://[fd00::1]/", "https://[fe80::1]/", "https://0.0.0.0/",
                "https://2130706433/",
                "https://[::ffff:127.0.0.1]/", "https://[::ffff:0:127.0.0.1]/", "https://[64:ff9b:1::a00:1]/",
                "https://[64:ff9b::8.8.8.8]/", "https://192.0.2.1/", "https://198.51.100.7/", "https://203.0.113.9/",
                "https://198.18.0.1/", "https://[2001:db8::1]/", "https://[2002:7f00:1::1]/", "https://[100::1]/"
            ] {
                let problem = try await Self.register(client, key: key, url: url).expectProblem(
                    .badRequest, code: "webhook_private_target")
                #expect((problem["detail"] as? String)?.contains("public") == true, "\(url): \(problem)")
            }
            // A name: what it resolves to is not said (it could be internal DNS).
            let named = try await Self.register(client, key: key, url: "https://localhost:8443/hook").expectProblem(
                .badRequest, code: "webhook_unresolvable")
            let detail = try #require(named["detail"] as? String)
            #expect(
                detail.contains("could not be reached") && !detail.contains("127.0.0.1")
                    && !detail.contains("localhost")
                    && !detail.contains("loopback"), "\(detail)")
            try await Self.register(client, key: key, url: "http://example.com/hook").expectProblem(
                .badRequest, code: "webhook_https_required")
            try await Self.register(client, key: key, url: "ftp://example.com/hook").expectProblem(
                .badRequest, code: "invalid_webhook_url")
            try await Self.register(client, key: key, url: "https://user:pw@example.com/").expectProblem(
                .badRequest, code: "invalid_webhook_url")
            try await Self.register(client, key: key, url: "https://example.com/" + String(repeating: "a", count: 2100))
                .expectProblem(.badRequest, code: "invalid_webhook_url")
            try await client.get("/api/v1/account/webhook", key: key).expectProblem(.notFound)
        }
    }

    /// Another account's job has no delivery log for this key (404, like the job itself).
    @Test func otherAccountsDeliveryLogIsNotFound() async throws {
        let server = try await Self.server(workers: 0)
        let video = try await Fixtures.data(.tiny)
        try await withServer(server, .router) { client in
            let (_, owner) = try await client.createAccount()
            let (_, stranger) = try await client.createAccount()
            _ = try await Self.register(client, key: owner, url: "http://127.0.0.1:9/hook")
            let job = try #require(try await client.upload(key: owner, file: video).json()["job_id"] as? String)
            #expect(try await client.get("/api/v1/jobs/\(job)", key: owner, method: .delete).status == .ok)
            let own = try await client.get("/api/v1/jobs/\(job)/webhooks", key: owner).json()
            #expect((own["deliveries"] as? [[String: Any]])?.count == 1)
            try await client.get("/api/v1/jobs/\(job)/webhooks", key: stranger).expectProblem(
                .notFound, code: "job_not_found")
            try await client.get("/api/v1/jobs/nope/webhooks", key: owner).expectProblem(
                .notFound, code: "job_not_found")
        }
    }
}
