import Crypto
import Foundation
import MediaVocabulary
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Logging
import MomentsConfig
import Store
import Synchronization
import Testing
import Webhooks

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
        try await client.executeRequest(
            uri: "/api/v1/account/webhook", method: .put,
            headers: [.authorization: "Bearer \(key)", .contentType: "application/json"],
            body: ByteBuffer(string: #"{"url": "\#(url)"}"#))
    }

    /// Polls the delivery log until `done` holds.
    static func deliveries(
        _ client: any TestClientProtocol, job: String, key: String, timeout: Double = 60,
        until done: ([[String: Any]]) -> Bool
    ) async throws -> [[String: Any]] {
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
                _ = try await client.poll(job: job, key: key) {
                    ($0["status"] as? String).map { $0 != "pending" && $0 != "processing" } ?? false
                }

                let log = try await Self.deliveries(client, job: job, key: key) {
                    $0.first?["status"] as? String == "delivered"
                }
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
                    #expect(
                        data["job_id"] as? String == job && data["status"] as? String == "completed"
                            && data["progress"] as? Int == 100)
                    #expect(
                        data["result_url"] as? String
                            == "\(server.service.settings.baseURL)/api/v1/jobs/\(job)/download")
                }
                #expect(Set(hits.map(\.body)).count == 1, "every attempt carries the same event")
                let (_, metrics) = try await client.metrics()
                #expect(
                    (metrics.value("moments_webhook_attempts_total", ["outcome": "retried"]) ?? 0) >= 1,
                    "\(metrics.text)")
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
                let secret = try #require(
                    try await Self.register(client, key: key, url: url).json()["secret"] as? String)
                let job = try #require(try await client.upload(key: key, file: video).json()["job_id"] as? String)
                let cancelled = try await client.get("/api/v1/jobs/\(job)", key: key, method: .delete)
                #expect(cancelled.status == .ok)
                let log = try await Self.deliveries(client, job: job, key: key) {
                    $0.first?["status"] as? String == "delivered"
                }
                #expect(log.first?["type"] as? String == "job.cancelled")
                let hit = try #require(receiver.received.first)
                Self.verify(hit, secret: secret)
                let data = try Self.body(hit)["data"] as? [String: Any]
                #expect(
                    data?["status"] as? String == "cancelled" && data?["result_url"] is NSNull,
                    "\(String(describing: data))")
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
            #expect(
                written.count == 1 && written.first?.delivery.status == .pending
                    && written.first?.attempts.isEmpty == true)
            // A dispatcher takes it and is gone before recording anything.
            let taken = try await store.claimDueWebhooks(
                worker: "gone-host/1/dead#webhooks", leaseSeconds: 1, limit: 10, now: Date())
            #expect(taken.map(\.delivery.id) == written.map(\.delivery.id))
            #expect(taken.first?.endpoint?.secret == secret)

            try await withServer(server, .live) { client in
                let log = try await Self.deliveries(client, job: jobId, key: key) {
                    $0.first?["status"] as? String == "delivered"
                }
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
    static func failedJob(_ server: TestServer, url: String, now: Date = Date()) async throws -> (
        accountId: String, key: String, secret: String, job: String
    ) {
        let store = server.service.database
        let (account, key) = try await server.service.createAccount(label: nil)
        let secret = try await store.setWebhookEndpoint(
            accountId: account.id, url: url, secret: WebhookEndpoint.newSecret(), now: now
        ).secret
        let input = JobInput(
            size: 1000, duration: 2, container: "mov,mp4,m4a,3gp,3g2,mj2", videoCodec: "h264", audioCodec: nil,
            width: 160, height: 90, rotation: 0, frameRate: 30)
        let job = Job(
            id: UUID().uuidString.lowercased(), accountId: account.id, targetDuration: 5, quality: .medium,
            input: input,
            estimatedSeconds: 5, now: now)
        try await store.insertUnmetered(job)
        #expect(
            try await store.fail(
                id: job.id, worker: nil, code: "test_failure", message: "Failed for the test.", chargeSeconds: 0,
                now: now))
        return (account.id, key, secret, job.id)
    }

    /// A 3xx is a failed attempt: the Location is not followed, and the delivery is tried again later.
    @Test func redirectsAreNotFollowed() async throws {
        let server = try await Self.server(workers: 0)
        let receiver = Receiver { _ in Response(status: .temporaryRedirect, headers: [.location: "/elsewhere"]) }
        try await receiver.run { url in
            let (_, key, _, job) = try await Self.failedJob(server, url: url)
            try await withServer(server, .live) { client in
                let log = try await Self.deliveries(client, job: job, key: key) {
                    (($0.first?["attempts"] as? [[String: Any]])?.count ?? 0) >= 2
                }
                let attempts = try #require(log.first?["attempts"] as? [[String: Any]])
                #expect(log.first?["status"] as? String == "pending" && log.first?["next_attempt_at"] is String)
                #expect(
                    attempts.allSatisfy {
                        $0["status_code"] as? Int == 307 && ($0["error"] as? String)?.contains("redirect") == true
                    }, "\(attempts)")
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
            let (accountId, _, _, job) = try await Self.failedJob(
                server, url: url.replacingOccurrences(of: "http://", with: "https://"))
            var logger = Logger(label: "moments-test")
            logger.logLevel = .critical
            let dispatcher = WebhookDispatcher(
                database: server.service.database, settings: server.service.settings.webhooks,
                baseURL: server.service.settings.baseURL, worker: "test#webhooks", secret: server.service.serverSecret, logger: logger)
            #expect(await dispatcher.deliverDue() == 1)
            let log = try await server.service.database.webhookDeliveries(jobId: job, accountId: accountId)
            let attempt = try #require(log.first?.attempts.first)
            #expect(attempt.statusCode == nil && attempt.error?.contains("loopback") == true, "\(attempt)")
            #expect(log.first?.delivery.status == .pending, "tried again later (the address may change back)")
            #expect(receiver.received.isEmpty)
        }
    }

    /// The attempt's deadline covers the address lookup too: a resolver that does not answer ends
    /// the attempt at the deadline (2 s here; the lookup's own deadline is longer) with "could not
    /// be reached", and the lookup's slot is free again at once; only its thread stays counted
    /// until the resolver returns.
    @Test func aHangingLookupEndsAtTheDeadline() async throws {
        let server = try await TestServer { s in s.workers = 0 }
        let gate = HostileWebhookTests.Gate()
        defer { gate.open() }
        let network = WebhookNetwork(resolve: { _ in
            while !gate.isOpen { Thread.sleep(forTimeInterval: 0.01) }
            throw POSIXError(.ETIMEDOUT)
        })
        let budget = WebhookLookupBudget(deadline: .seconds(30))
        let (accountId, _, _, job) = try await Self.failedJob(server, url: "https://hangs.example.net/hook")
        var logger = Logger(label: "moments-test")
        logger.logLevel = .critical
        let dispatcher = WebhookDispatcher(
            database: server.service.database, settings: server.service.settings.webhooks,
            baseURL: server.service.settings.baseURL, worker: "test#webhooks", secret: server.service.serverSecret, logger: logger,
            deadline: AttemptDeadline(.seconds(2)))
        dispatcher.targets = WebhookTargetChecker(allowPrivate: false, network: network, budget: budget)
        let started = ContinuousClock.now
        #expect(await dispatcher.deliverDue() == 1)
        let took = ContinuousClock.now - started
        #expect(took > .seconds(1.5) && took < .seconds(5), "\(took)")
        let attempt = try #require(
            try await server.service.database.webhookDeliveries(jobId: job, accountId: accountId).first?.attempts.first)
        #expect(
            attempt.statusCode == nil
                && attempt.error == "the endpoint could not be reached: no answer within 2 seconds",
            "\(attempt)")
        #expect(
            try await HostileWebhookTests.waitFor(1) { budget.waiting == 0 },
            "the slot is free once the attempt gave up")
        #expect(budget.inResolver == 1, "the lookup's thread is still counted")
        gate.open()
        let deadline = Date().addingTimeInterval(5)
        while budget.inResolver > 0 && Date() < deadline { try await Task.sleep(for: .milliseconds(10)) }
        #expect(budget.inResolver == 0)
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
                _ = try await Self.deliveries(client, job: job, key: key) {
                    (($0.first?["attempts"] as? [[String: Any]])?.count ?? 0) >= 1
                }
                clock.now = clock.now.addingTimeInterval(24.5 * 3600)
                let log = try await Self.deliveries(client, job: job, key: key) {
                    $0.first?["status"] as? String == "failed"
                }
                let attempts = try #require(log.first?["attempts"] as? [[String: Any]])
                #expect(attempts.count == 2 && attempts.allSatisfy { $0["status_code"] as? Int == 503 }, "\(attempts)")
                #expect(log.first?["next_attempt_at"] is NSNull && log.first?["delivered_at"] is NSNull)
            }
            #expect(receiver.received.count == 2)
        }
    }
}
