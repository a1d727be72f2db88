import Crypto
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import JobStore
import Jobs
import Logging
import MomentsConfig
import Synchronization
import Testing

/// Signed webhooks: the account's endpoint, the outbox written with the job's final state, the
/// dispatcher's signed POSTs and retries, the delivery log, and the private-target rule.
@Suite("Webhooks")
struct WebhookTests {
    /// A local endpoint: records every request and answers 500 to the first `failures` of them,
    /// 200 after (or what `respond` says for the n-th request, from 1).
    final class Receiver: Sendable {
        struct Hit: Sendable {
            var path: String
            var headers: HTTPFields
            var body: Data
        }

        let hits = Mutex<[Hit]>([])
        let respond: @Sendable (Int) -> Response

        init(failures: Int) {
            respond = { count in Response(status: count <= failures ? .internalServerError : .ok) }
        }

        init(respond: @escaping @Sendable (Int) -> Response) { self.respond = respond }

        var received: [Hit] { hits.withLock { $0 } }

        /// Runs `body` with the receiver listening on a free loopback port; passes its URL.
        func run<T: Sendable>(_ body: @Sendable (String) async throws -> T) async throws -> T {
            let router = Router()
            for path in ["/hook", "/elsewhere"] {
                router.post(RouterPath(path)) { request, _ -> Response in
                    let data = Data((try await request.body.collect(upTo: 1 << 20)).readableBytesView)
                    let count = self.hits.withLock { hits -> Int in
                        hits.append(Hit(path: request.uri.path, headers: request.headers, body: data))
                        return hits.count
                    }
                    return self.respond(count)
                }
            }
            let app = Application(router: router, configuration: .init(address: .hostname("127.0.0.1", port: 0)))
            return try await app.test(.live) { client in
                try await body("http://127.0.0.1:\(try #require(client.port))/hook")
            }
        }
    }

    /// A server whose dispatcher may reach the local receiver and retries within a second.
    static func server(workers: Int = 1) async throws -> TestServer {
        try await TestServer { s in
            s.workers = workers
            s.webhooks.allowPrivateTargets = true
            s.webhooks.retryBackoffSeconds = 0.3
            s.webhooks.pollSeconds = 0.2
        }
    }

    /// Checks a request as a receiver should, independently of the service's code: HMAC-SHA256 of
    /// "t.body" with the secret, in hex, and `t` within five minutes.
    static func verify(_ hit: Receiver.Hit, secret: String, sourceLocation: SourceLocation = #_sourceLocation) {
        guard let header = hit.headers[HTTPField.Name("Moments-Signature")!] else {
            Issue.record("no Moments-Signature header", sourceLocation: sourceLocation)
            return
        }
        var fields: [String: String] = [:]
        for part in header.split(separator: ",") {
            let pair = part.split(separator: "=", maxSplits: 1)
            if pair.count == 2 { fields[String(pair[0])] = String(pair[1]) }
        }
        guard let t = fields["t"], let timestamp = Double(t), let v1 = fields["v1"] else {
            Issue.record("malformed signature header \(header)", sourceLocation: sourceLocation)
            return
        }
        #expect(abs(Date().timeIntervalSince1970 - timestamp) < 300, sourceLocation: sourceLocation)
        var message = Data("\(t).".utf8)
        message.append(hit.body)
        let expected = HMAC<SHA256>.authenticationCode(for: message, using: SymmetricKey(data: Data(secret.utf8)))
            .map { String(format: "%02x", $0) }.joined()
        #expect(v1 == expected, "signature mismatch: \(header)", sourceLocation: sourceLocation)
    }

    static func register(_ client: any TestClientProtocol, key: String, url: String) async throws -> TestResponse {
        try await client.executeRequest(uri: "/api/v1/account/webhook", method: .put,
                                        headers: [.authorization: "Bearer \(key)", .contentType: "application/json"],
                                        body: ByteBuffer(string: #"{"url": "\#(url)"}"#))
    }

    /// Polls the delivery log until `done` holds.
    static func deliveries(_ client: any TestClientProtocol, job: String, key: String, timeout: Double = 60,
                           until done: ([[String: Any]]) -> Bool) async throws -> [[String: Any]] {
        let deadline = Date().addingTimeInterval(timeout)
        var last: [[String: Any]] = []
        while Date() < deadline {
            let response = try await client.get("/api/v1/jobs/\(job)/webhooks", key: key)
            #expect(response.status == .ok, "\(response.text)")
            last = try response.json()["deliveries"] as? [[String: Any]] ?? []
            if done(last) { return last }
            try await Task.sleep(for: .milliseconds(200))
        }
        Issue.record("the delivery log of \(job) did not reach the expected state; last: \(last)")
        return last
    }

    static func body(_ hit: Receiver.Hit) throws -> [String: Any] {
        try JSONSerialization.jsonObject(with: hit.body) as? [String: Any] ?? [:]
    }

    // MARK: Delivery

    /// The required test: the receiver verifies every signature, answers 500 the first time, and
    /// the dispatcher tries again (same event, same id) until it gets 200; the log shows both.
    @Test func signedDeliveryIsRetriedAfterA500() async throws {
        let server = try await Self.server()
        let receiver = Receiver(failures: 1)
        let video = try await Fixtures.data(.short)
        try await receiver.run { url in
            try await withServer(server, .live) { client in
                let (_, key) = try await client.createAccount()
                let registered = try await Self.register(client, key: key, url: url)
                #expect(registered.status == .ok, "\(registered.text)")
                let secret = try #require(try registered.json()["secret"] as? String)
                #expect(secret.hasPrefix("whsec_") && secret.count > 40)

                let accepted = try await client.upload(key: key, file: video, fields: [("target_duration", "5")])
                let job = try #require(try accepted.json()["job_id"] as? String)
                _ = try await client.poll(job: job, key: key) { ($0["status"] as? String).map { $0 != "pending" && $0 != "processing" } ?? false }

                let log = try await Self.deliveries(client, job: job, key: key) { $0.first?["status"] as? String == "delivered" }
                #expect(log.count == 1, "one event per job: \(log)")
                let delivery = try #require(log.first)
                #expect(delivery["type"] as? String == "job.completed")
                let attempts = try #require(delivery["attempts"] as? [[String: Any]])
                #expect(attempts.count >= 2, "\(attempts)")
                #expect(attempts.first?["status_code"] as? Int == 500)
                #expect(attempts.last?["status_code"] as? Int == 200)
                #expect(attempts.allSatisfy { $0["duration_ms"] is Int && $0["at"] is String })
                #expect(delivery["next_attempt_at"] is NSNull && delivery["delivered_at"] is String)

                let hits = receiver.received
                #expect(hits.count == attempts.count, "one request per attempt")
                for hit in hits {
                    Self.verify(hit, secret: secret)
                    #expect(hit.headers[.contentType] == "application/json")
                    #expect(hit.headers[.userAgent] == "Moments-Webhooks/1")
                    #expect(hit.headers[HTTPField.Name("Moments-Event")!] == "job.completed")
                    #expect(hit.headers[HTTPField.Name("Moments-Delivery")!] == delivery["id"] as? String)
                    let event = try Self.body(hit)
                    #expect(event["id"] as? String == delivery["id"] as? String)
                    #expect(event["type"] as? String == "job.completed")
                    #expect(event["created_at"] is String)
                    let data = try #require(event["data"] as? [String: Any])
                    #expect(data["job_id"] as? String == job && data["status"] as? String == "completed" && data["progress"] as? Int == 100)
                    #expect(data["result_url"] as? String == "\(server.service.settings.baseURL)/api/v1/jobs/\(job)/download")
                }
                #expect(Set(hits.map(\.body)).count == 1, "every attempt carries the same event")
                let (_, metrics) = try await client.metrics()
                #expect((metrics.value("moments_webhook_attempts_total", ["outcome": "retried"]) ?? 0) >= 1, "\(metrics.text)")
                #expect((metrics.value("moments_webhook_attempts_total", ["outcome": "delivered"]) ?? 0) >= 1)
                #expect(metrics.value("moments_webhook_attempts_total", ["outcome": "gave_up"]) != nil)
            }
        }
    }

    /// Cancelling a pending job announces job.cancelled.
    @Test func cancelAnnouncesJobCancelled() async throws {
        let server = try await Self.server(workers: 0)
        let receiver = Receiver(failures: 0)
        let video = try await Fixtures.data(.tiny)
        try await receiver.run { url in
            try await withServer(server, .live) { client in
                let (_, key) = try await client.createAccount()
                let secret = try #require(try await Self.register(client, key: key, url: url).json()["secret"] as? String)
                let job = try #require(try await client.upload(key: key, file: video).json()["job_id"] as? String)
                let cancelled = try await client.get("/api/v1/jobs/\(job)", key: key, method: .delete)
                #expect(cancelled.status == .ok)
                let log = try await Self.deliveries(client, job: job, key: key) { $0.first?["status"] as? String == "delivered" }
                #expect(log.first?["type"] as? String == "job.cancelled")
                let hit = try #require(receiver.received.first)
                Self.verify(hit, secret: secret)
                let data = try Self.body(hit)["data"] as? [String: Any]
                #expect(data?["status"] as? String == "cancelled" && data?["result_url"] is NSNull, "\(String(describing: data))")
            }
        }
    }

    /// At least once: an outbox row written while no dispatcher runs, then claimed by a dispatcher
    /// that died mid-attempt (its lease never released), is delivered once a dispatcher runs and
    /// the lease has expired (found by polling: no store event announces it).
    @Test func outboxSurvivesADispatcherThatIsGone() async throws {
        let server = try await Self.server(workers: 0)
        let receiver = Receiver(failures: 0)
        try await receiver.run { url in
            // Before the application (and its job runner, which runs the dispatcher) starts: the
            // account, its endpoint and a job that fails, written straight to the store.
            let store = server.service.database
            let (accountId, key, secret, jobId) = try await Self.failedJob(server, url: url)
            let written = try await store.webhookDeliveries(jobId: jobId, accountId: accountId)
            #expect(written.count == 1 && written.first?.delivery.status == .pending && written.first?.attempts.isEmpty == true)
            // A dispatcher takes it and is gone before recording anything.
            let taken = try await store.claimDueWebhooks(worker: "gone-host/1/dead#webhooks", leaseSeconds: 1, limit: 10, now: Date())
            #expect(taken.map(\.delivery.id) == written.map(\.delivery.id))
            #expect(taken.first?.endpoint?.secret == secret)

            try await withServer(server, .live) { client in
                let log = try await Self.deliveries(client, job: jobId, key: key) { $0.first?["status"] as? String == "delivered" }
                #expect(log.first?["type"] as? String == "job.failed")
                #expect((log.first?["attempts"] as? [[String: Any]])?.count == 1)
                let hit = try #require(receiver.received.first)
                Self.verify(hit, secret: secret)
                let data = try Self.body(hit)["data"] as? [String: Any]
                #expect(data?["status"] as? String == "failed" && data?["error_code"] as? String == "test_failure")
            }
        }
    }

    /// An account with an endpoint at `url` and a job of it that failed, written straight to the
    /// store (no check of the URL, no application running): one delivery in the outbox.
    static func failedJob(_ server: TestServer, url: String, now: Date = Date()) async throws -> (accountId: String, key: String, secret: String, job: String) {
        let store = server.service.database
        let (account, key) = try await server.service.createAccount(label: nil)
        let secret = try await store.setWebhookEndpoint(accountId: account.id, url: url, secret: WebhookEndpoint.newSecret(), now: now).secret
        let input = JobInput(size: 1000, duration: 2, container: "mov,mp4,m4a,3gp,3g2,mj2", videoCodec: "h264", audioCodec: nil,
                             width: 160, height: 90, rotation: 0, frameRate: 30)
        let job = Job(id: UUID().uuidString.lowercased(), accountId: account.id, targetDuration: 5, quality: "medium", input: input,
                      estimatedSeconds: 5, now: now)
        try await store.insertUnmetered(job)
        #expect(try await store.fail(id: job.id, worker: nil, code: "test_failure", message: "Failed for the test.", chargeSeconds: 0, now: now))
        return (account.id, key, secret, job.id)
    }

    /// A 3xx is a failed attempt: the Location is not followed, and the delivery is tried again later.
    @Test func redirectsAreNotFollowed() async throws {
        let server = try await Self.server(workers: 0)
        let receiver = Receiver { _ in Response(status: .temporaryRedirect, headers: [.location: "/elsewhere"]) }
        try await receiver.run { url in
            let (_, key, _, job) = try await Self.failedJob(server, url: url)
            try await withServer(server, .live) { client in
                let log = try await Self.deliveries(client, job: job, key: key) { (($0.first?["attempts"] as? [[String: Any]])?.count ?? 0) >= 2 }
                let attempts = try #require(log.first?["attempts"] as? [[String: Any]])
                #expect(log.first?["status"] as? String == "pending" && log.first?["next_attempt_at"] is String)
                #expect(attempts.allSatisfy { $0["status_code"] as? Int == 307 && ($0["error"] as? String)?.contains("redirect") == true }, "\(attempts)")
            }
            #expect(receiver.received.allSatisfy { $0.path == "/hook" }, "the redirect's target was never asked")
        }
    }

    /// The address is checked again before every attempt (DNS may have changed since the
    /// endpoint was registered): a dispatcher without allowPrivateTargets sends nothing to a
    /// loopback endpoint and logs why.
    @Test func deliveryChecksTheAddressAgain() async throws {
        let server = try await TestServer { s in s.workers = 0 }
        let receiver = Receiver(failures: 0)
        try await receiver.run { url in
            // https: the address check comes before any connection (which would fail on this
            // plain-http receiver anyway).
            let (accountId, _, _, job) = try await Self.failedJob(server, url: url.replacingOccurrences(of: "http://", with: "https://"))
            var logger = Logger(label: "moments-test")
            logger.logLevel = .critical
            let dispatcher = WebhookDispatcher(database: server.service.database, settings: server.service.settings.webhooks,
                                               baseURL: server.service.settings.baseURL, worker: "test#webhooks", logger: logger)
            #expect(await dispatcher.deliverDue() == 1)
            let log = try await server.service.database.webhookDeliveries(jobId: job, accountId: accountId)
            let attempt = try #require(log.first?.attempts.first)
            #expect(attempt.statusCode == nil && attempt.error?.contains("loopback") == true, "\(attempt)")
            #expect(log.first?.delivery.status == .pending, "tried again later (the address may change back)")
            #expect(receiver.received.isEmpty)
        }
    }

    /// The attempt's deadline covers the address lookup too: a resolver that does not answer ends
    /// the attempt at 10 s ("could not be reached"); the lookup's thread keeps its share of the
    /// budget until the resolver returns.
    @Test func aHangingLookupEndsAtTheDeadline() async throws {
        let server = try await TestServer { s in s.workers = 0 }
        let gate = HostileWebhookTests.Gate()
        defer { gate.open() }
        let network = WebhookNetwork(resolve: { _ in
            while !gate.isOpen { Thread.sleep(forTimeInterval: 0.01) }
            throw POSIXError(.ETIMEDOUT)
        })
        let budget = WebhookLookupBudget()
        let (accountId, _, _, job) = try await Self.failedJob(server, url: "https://hangs.example.net/hook")
        var logger = Logger(label: "moments-test")
        logger.logLevel = .critical
        let dispatcher = WebhookDispatcher(database: server.service.database, settings: server.service.settings.webhooks,
                                           baseURL: server.service.settings.baseURL, worker: "test#webhooks", logger: logger)
        dispatcher.targets = WebhookTargetChecker(allowPrivate: false, network: network, budget: budget)
        let started = ContinuousClock.now
        #expect(await dispatcher.deliverDue() == 1)
        let took = ContinuousClock.now - started
        #expect(took > .seconds(9) && took < .seconds(13), "\(took)")
        let attempt = try #require(try await server.service.database.webhookDeliveries(jobId: job, accountId: accountId).first?.attempts.first)
        #expect(attempt.statusCode == nil && attempt.error?.contains("could not be reached") == true, "\(attempt)")
        #expect(budget.running == 1, "the lookup's thread still holds its share")
        gate.open()
        let deadline = Date().addingTimeInterval(5)
        while budget.running > 0 && Date() < deadline { try await Task.sleep(for: .milliseconds(10)) }
        #expect(budget.running == 0)
    }

    /// A delivery that never gets a 2xx is given up 24 hours after its event.
    @Test func givesUpAfter24Hours() async throws {
        let clock = TestClock(Date())
        let server = try await TestServer(clock: clock) { s in
            s.workers = 0
            s.webhooks.allowPrivateTargets = true
            s.webhooks.retryBackoffSeconds = 0.3
            s.webhooks.pollSeconds = 0.2
        }
        let receiver = Receiver { _ in Response(status: .serviceUnavailable) }
        try await receiver.run { url in
            let (_, key, _, job) = try await Self.failedJob(server, url: url, now: clock.now)
            try await withServer(server, .live) { client in
                // The test clock stands still: the retry comes due only when it is moved on.
                _ = try await Self.deliveries(client, job: job, key: key) { (($0.first?["attempts"] as? [[String: Any]])?.count ?? 0) >= 1 }
                clock.now = clock.now.addingTimeInterval(24.5 * 3600)
                let log = try await Self.deliveries(client, job: job, key: key) { $0.first?["status"] as? String == "failed" }
                let attempts = try #require(log.first?["attempts"] as? [[String: Any]])
                #expect(attempts.count == 2 && attempts.allSatisfy { $0["status_code"] as? Int == 503 }, "\(attempts)")
                #expect(log.first?["next_attempt_at"] is NSNull && log.first?["delivered_at"] is NSNull)
            }
            #expect(receiver.received.count == 2)
        }
    }

    // MARK: Endpoint

    /// PUT registers and shows the secret once; GET shows the URL only; PUT again rotates the
    /// secret; DELETE removes it.
    @Test func endpointLifecycle() async throws {
        let server = try await Self.server(workers: 0)
        try await withServer(server, .router) { client in
            let (_, key) = try await client.createAccount()
            try await client.get("/api/v1/account/webhook", key: key).expectProblem(.notFound, code: "webhook_not_found")
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
            try await client.get("/api/v1/account/webhook", key: key).expectProblem(.notFound, code: "webhook_not_found")
            try await client.get("/api/v1/account/webhook", key: key, method: .delete).expectProblem(.notFound)
            try await client.get("/api/v1/account/webhook", key: nil).expectProblem(.unauthorized)
            try await client.executeRequest(uri: "/api/v1/account/webhook", method: .put,
                                            headers: [.authorization: "Bearer \(key)"], body: ByteBuffer(string: #"{"uri": "x"}"#))
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
            for url in ["https://127.0.0.1/hook", "https://10.1.2.3/", "https://172.16.0.1/",
                        "https://192.168.1.10/", "https://100.64.0.1/", "https://169.254.169.254/latest/meta-data",
                        "https://[::1]/hook", "https://[fd00::1]/", "https://[fe80::1]/", "https://0.0.0.0/", "https://2130706433/",
                        "https://[::ffff:127.0.0.1]/", "https://[::ffff:0:127.0.0.1]/", "https://[64:ff9b:1::a00:1]/",
                        "https://[64:ff9b::8.8.8.8]/", "https://192.0.2.1/", "https://198.51.100.7/", "https://203.0.113.9/",
                        "https://198.18.0.1/", "https://[2001:db8::1]/", "https://[2002:7f00:1::1]/", "https://[100::1]/"] {
                let problem = try await Self.register(client, key: key, url: url).expectProblem(.badRequest, code: "webhook_private_target")
                #expect((problem["detail"] as? String)?.contains("public") == true, "\(url): \(problem)")
            }
            // A name: what it resolves to is not said (it could be internal DNS).
            let named = try await Self.register(client, key: key, url: "https://localhost:8443/hook").expectProblem(.badRequest, code: "webhook_unresolvable")
            let detail = try #require(named["detail"] as? String)
            #expect(detail.contains("could not be reached") && !detail.contains("127.0.0.1") && !detail.contains("localhost")
                    && !detail.contains("loopback"), "\(detail)")
            try await Self.register(client, key: key, url: "http://example.com/hook").expectProblem(.badRequest, code: "webhook_https_required")
            try await Self.register(client, key: key, url: "ftp://example.com/hook").expectProblem(.badRequest, code: "invalid_webhook_url")
            try await Self.register(client, key: key, url: "https://user:pw@example.com/").expectProblem(.badRequest, code: "invalid_webhook_url")
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
            try await client.get("/api/v1/jobs/\(job)/webhooks", key: stranger).expectProblem(.notFound, code: "job_not_found")
            try await client.get("/api/v1/jobs/nope/webhooks", key: owner).expectProblem(.notFound, code: "job_not_found")
        }
    }

    // MARK: Pieces

    /// `t=<unix>,v1=<hex HMAC-SHA256(secret, "t.body")>`, checked against a vector computed apart
    /// (Python's hmac), and the verifier's tolerance.
    @Test func signatureFormat() {
        let header = WebhookSignature.header(secret: "whsec_test", timestamp: 1_700_000_000, body: Array(#"{"a":1}"#.utf8))
        #expect(header == "t=1700000000,v1=38877139021993b830af32feea6e18a8da83eb2f6e49ee50bd9e4cf4ca4d3789")
        let at = Date(timeIntervalSince1970: 1_700_000_100)
        #expect(WebhookSignature.verify(header: header, secret: "whsec_test", body: Array(#"{"a":1}"#.utf8), now: at))
        #expect(!WebhookSignature.verify(header: header, secret: "whsec_other", body: Array(#"{"a":1}"#.utf8), now: at))
        #expect(!WebhookSignature.verify(header: header, secret: "whsec_test", body: Array(#"{"a":2}"#.utf8), now: at))
        #expect(!WebhookSignature.verify(header: header, secret: "whsec_test", body: Array(#"{"a":1}"#.utf8),
                                         now: at.addingTimeInterval(600)), "older than five minutes")
        let secret = WebhookEndpoint.newSecret()
        #expect(secret.hasPrefix("whsec_") && secret.count == 6 + 43 && secret != WebhookEndpoint.newSecret())
    }

    /// The address classifier: what is refused, and what is public.
    @Test func addressClassifier() {
        let refused: [String: String] = [
            "127.0.0.1": "loopback", "127.255.0.9": "loopback", "::1": "loopback", "10.0.0.1": "private", "172.16.5.4": "private",
            "172.31.255.255": "private", "192.168.0.1": "private", "100.64.0.1": "private", "100.127.255.1": "private",
            "169.254.169.254": "link-local", "fe80::1": "link-local", "fc00::1": "private", "fd12:3456::1": "private",
            "0.0.0.0": "unspecified", "::": "unspecified", "224.0.0.1": "multicast", "ff02::1": "multicast",
            "::ffff:10.0.0.1": "private", "::ffff:127.0.0.1": "loopback", "255.255.255.255": "reserved", "not an address": "reserved",
        ]
        for (address, kind) in refused { #expect(WebhookTargets.classify(address) == kind, "\(address)") }
        for address in ["8.8.8.8", "1.1.1.1", "172.15.0.1", "172.32.0.1", "100.63.255.255", "100.128.0.1", "192.169.0.1",
                        "2606:4700:4700::1111", "2001:4860:4860::8888", "::ffff:8.8.8.8"] {
            #expect(WebhookTargets.classify(address) == nil, "\(address) is public")
        }
    }

    /// The whole IANA special-purpose registries (IPv4 and IPv6), each block at its first and last
    /// address and just outside it.
    @Test func specialPurposeRegistry() {
        let blocks: [(first: String, last: String, before: String?, after: String?)] = [
            ("0.0.0.0", "0.255.255.255", nil, "1.0.0.0"),
            ("10.0.0.0", "10.255.255.255", "9.255.255.255", "11.0.0.0"),
            ("100.64.0.0", "100.127.255.255", "100.63.255.255", "100.128.0.0"),
            ("127.0.0.0", "127.255.255.255", "126.255.255.255", "128.0.0.0"),
            ("169.254.0.0", "169.254.255.255", "169.253.255.255", "169.255.0.0"),
            ("172.16.0.0", "172.31.255.255", "172.15.255.255", "172.32.0.0"),
            ("192.0.0.0", "192.0.0.255", "191.255.255.255", "192.0.1.0"),
            ("192.0.2.0", "192.0.2.255", "192.0.1.255", "192.0.3.0"),
            ("192.31.196.0", "192.31.196.255", "192.31.195.255", "192.31.197.0"),
            ("192.52.193.0", "192.52.193.255", "192.52.192.255", "192.52.194.0"),
            ("192.88.99.0", "192.88.99.255", "192.88.98.255", "192.88.100.0"),
            ("192.168.0.0", "192.168.255.255", "192.167.255.255", "192.169.0.0"),
            ("192.175.48.0", "192.175.48.255", "192.175.47.255", "192.175.49.0"),
            ("198.18.0.0", "198.19.255.255", "198.17.255.255", "198.20.0.0"),
            ("198.51.100.0", "198.51.100.255", "198.51.99.255", "198.51.101.0"),
            ("203.0.113.0", "203.0.113.255", "203.0.112.255", "203.0.114.0"),
            ("224.0.0.0", "255.255.255.255", "223.255.255.255", nil),
            ("::", "::", nil, nil),
            ("::1", "::1", nil, nil),
            ("::ffff:0:0:0", "::ffff:0:ffff:ffff", nil, nil),
            ("64:ff9b::", "64:ff9b::ffff:ffff", nil, nil),
            ("64:ff9b:1::", "64:ff9b:1:ffff:ffff:ffff:ffff:ffff", nil, nil),
            ("100::", "100::ffff:ffff:ffff:ffff", nil, nil),
            ("2001::", "2001:1ff:ffff:ffff:ffff:ffff:ffff:ffff", nil, "2001:200::"),
            ("2001:db8::", "2001:db8:ffff:ffff:ffff:ffff:ffff:ffff", "2001:db7:ffff:ffff:ffff:ffff:ffff:ffff", "2001:db9::"),
            ("2002::", "2002:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "2001:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "2003::"),
            ("3fff::", "3fff:fff:ffff:ffff:ffff:ffff:ffff:ffff", "3ffe:ffff:ffff:ffff:ffff:ffff:ffff:ffff", nil),
            ("fc00::", "fdff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", nil, nil),
            ("fe80::", "febf:ffff:ffff:ffff:ffff:ffff:ffff:ffff", nil, nil),
            ("fec0::", "feff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", nil, nil),
            ("ff00::", "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", nil, nil),
        ]
        for block in blocks {
            #expect(SpecialPurposeAddresses.classify(block.first) != nil, "\(block.first)")
            #expect(SpecialPurposeAddresses.classify(block.last) != nil, "\(block.last)")
            if let before = block.before { #expect(SpecialPurposeAddresses.classify(before) == nil, "\(before) is public") }
            if let after = block.after { #expect(SpecialPurposeAddresses.classify(after) == nil, "\(after) is public") }
        }
        let kinds: [String: String] = [
            "192.0.2.10": "documentation", "198.51.100.1": "documentation", "203.0.113.200": "documentation",
            "2001:db8::1": "documentation", "3fff::1": "documentation", "198.18.3.4": "benchmarking", "198.19.0.1": "benchmarking",
            "::ffff:0:127.0.0.1": "reserved", "64:ff9b::808:808": "reserved", "64:ff9b:1::a00:1": "reserved",
            "2002:808:808::1": "reserved", "2001::1": "reserved", "100::1": "reserved", "::ffff:192.0.2.1": "documentation",
            "::ffff:0.0.0.0": "unspecified", "::8.8.8.8": "reserved", "5f00::1": "reserved", "2620:4f:8000::1": "reserved",
            "fec0::1": "private", "4000::1": "reserved", "1234::1": "reserved",
        ]
        for (address, kind) in kinds { #expect(SpecialPurposeAddresses.classify(address) == kind, "\(address)") }
        // Public neighbours.
        for address in ["2001:200::1", "2620:4f:8001::1", "2400:cb00::1", "2a00:1450:4001::1", "3ffe::1", "::ffff:1.1.1.1",
                        "192.0.1.1", "192.31.197.1", "198.20.0.1", "223.255.255.255"] {
            #expect(SpecialPurposeAddresses.classify(address) == nil, "\(address) is public")
        }
    }

    /// The connection goes to the address that was checked (the HTTP client's DNS override pins
    /// the name to it), while the URL — its Host header, its TLS server name — stays as written;
    /// a URL naming an address in standard form needs no override.
    @Test func targetsArePinnedToTheCheckedAddress() async throws {
        let checker = WebhookTargetChecker(allowPrivate: true, budget: WebhookLookupBudget())
        let target = try await checker.check("http://localhost:8080/a/b?c=d", account: "acct")
        #expect(target.addresses.allSatisfy { WebhookTargets.classify($0) == "loopback" } && !target.addresses.isEmpty)
        #expect(target.url == "http://localhost:8080/a/b?c=d" && target.host == "localhost")
        #expect(target.dnsOverride == ["localhost": target.pinned])
        let secure = try await checker.check("https://127.0.0.1/x", account: "acct")
        #expect(secure.url == "https://127.0.0.1/x" && secure.dnsOverride.isEmpty && secure.pinned == "127.0.0.1")
        let v6 = try await checker.check("https://[::1]:8443/x", account: "acct")
        #expect(v6.host == "::1" && v6.dnsOverride.isEmpty && v6.pinned == "::1")
        // A numeric form the client would resolve itself is pinned too.
        let decimal = try await checker.check("http://2130706433:9/x", account: "acct")
        #expect(decimal.dnsOverride == ["2130706433": "127.0.0.1"])
    }

    /// Lookups beyond an account's share are refused at once (the account is told to try again);
    /// other accounts keep theirs; a finished lookup gives its share back.
    @Test func lookupBudgetIsPerAccount() async throws {
        let gate = HostileWebhookTests.Gate()
        defer { gate.open() }
        let network = WebhookNetwork(resolve: { _ in
            while !gate.isOpen { Thread.sleep(forTimeInterval: 0.01) }
            return ["93.184.215.14"]
        })
        let budget = WebhookLookupBudget(total: 3, perAccount: 2)
        let checker = WebhookTargetChecker(allowPrivate: false, network: network, budget: budget)
        let held = (0..<2).map { n in Task { try await checker.check("https://slow\(n).example.net/", account: "a") } }
        let deadline = Date().addingTimeInterval(5)
        while budget.running < 2 && Date() < deadline { try await Task.sleep(for: .milliseconds(10)) }
        await #expect(throws: WebhookTargetRefusal.self) { try await checker.check("https://third.example.net/", account: "a") }
        let other = Task { try await checker.check("https://other.example.net/", account: "b") }
        while budget.running < 3 && Date() < deadline { try await Task.sleep(for: .milliseconds(10)) }
        do {
            _ = try await checker.check("https://fourth.example.net/", account: "c")
            Issue.record("the total was exceeded")
        } catch {
            #expect(error.code == "webhook_lookup_busy" && error.detail.contains("many"), "\(error)")
        }
        gate.open()
        for task in held { #expect(try await task.value.pinned == "93.184.215.14") }
        #expect(try await other.value.pinned == "93.184.215.14")
        #expect(budget.running == 0)
        #expect(try await checker.check("https://again.example.net/", account: "a").addresses == ["93.184.215.14"])
    }

    /// Retries back off exponentially (capped at an hour) and stop 24 h after the event.
    @Test func retrySchedule() {
        let created = Date(timeIntervalSince1970: 1_000_000)
        #expect(WebhookSchedule.nextAttempt(after: 1, base: 10, createdAt: created, now: created) == created.addingTimeInterval(10))
        #expect(WebhookSchedule.nextAttempt(after: 4, base: 10, createdAt: created, now: created) == created.addingTimeInterval(80))
        #expect(WebhookSchedule.nextAttempt(after: 20, base: 10, createdAt: created, now: created) == created.addingTimeInterval(3600))
        let late = created.addingTimeInterval(23.5 * 3600)
        #expect(WebhookSchedule.nextAttempt(after: 20, base: 10, createdAt: created, now: late) == nil, "past 24 h: given up")
    }

    /// The `webhooks.*` keys come from the environment, and Config/moments.json holds their defaults.
    @Test func webhookKeysAreConfigurable() async throws {
        let reader = try await MomentsConfiguration.reader(environment: [
            "WEBHOOKS_ALLOW_PRIVATE_TARGETS": "true", "WEBHOOKS_RETRY_BACKOFF_SECONDS": "2.5", "WEBHOOKS_POLL_SECONDS": "0.5",
        ], file: "/nonexistent/moments.json")
        let settings = ServiceSettings(reader: reader).webhooks
        #expect(settings.allowPrivateTargets && settings.retryBackoffSeconds == 2.5 && settings.pollSeconds == 0.5)
        let shipped = ServiceSettings(reader: try await MomentsConfiguration.reader(environment: [:], file: "Config/moments.json")).webhooks
        #expect(shipped == WebhookSettings())
        #expect(!shipped.allowPrivateTargets && shipped.retryBackoffSeconds == 10 && shipped.pollSeconds == 5)
    }
}
