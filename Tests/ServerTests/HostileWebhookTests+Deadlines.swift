import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Logging
import MomentsConfig
import Store
import Synchronization
import Testing
import Webhooks

/// One deadline per webhook attempt, a share of the attempt slots for failing endpoints, and
/// address lookups with a deadline whose slot a client going away frees (short deadlines here).
extension HostileWebhookTests {
    /// A dispatcher of the test's own on `server`'s store (the application is not started, so it
    /// is the only one): may reach loopback, tries again after `backoff`.
    static func dispatcher(_ server: TestServer, deadline: Duration, backoff: Double) -> WebhookDispatcher {
        var settings = WebhookSettings()
        settings.allowPrivateTargets = true
        settings.retryBackoffSeconds = backoff
        settings.pollSeconds = 0.1
        var logger = Logger(label: "moments-test")
        logger.logLevel = .critical
        return WebhookDispatcher(
            database: server.service.database, settings: settings, baseURL: server.service.settings.baseURL,
            worker: "test#webhooks", secret: server.service.serverSecret, logger: logger, deadline: AttemptDeadline(deadline))
    }

    /// The most connections `listener` had open at once, each counted from its accept to the close
    /// it saw, less `lag` (it notices a close within about 0.1 s).
    static func mostOpenAtOnce(_ listener: RawListener, lag: Double = 0.3) -> Int {
        let now = Date()
        let spans = listener.seen.map { ($0.accepted, ($0.closedByPeer ?? now).addingTimeInterval(-lag)) }
        return spans.map { span in spans.filter { $0.0 <= span.0 && span.0 < $0.1 }.count }.max() ?? 0
    }

    /// An endpoint that never finishes its answer's head, with a 1 s deadline: each attempt is
    /// given up and its connection closed within the deadline (the logged duration may be longer
    /// when the cooperative pool is slow to record it), the log says so in those words,
    /// and the next attempt (0.2 s later) never starts while one is open: the lease (22 s here,
    /// derived from the deadline) outlasts every attempt.
    @Test func aTarpitEndpointIsGivenUpAtTheDeadlineAndNotSentWhileInFlight() async throws {
        let tarpit = try RawListener(host: "127.0.0.1", behaviour: .trickleHead(every: 0.5))
        defer { tarpit.stop() }
        let server = try await TestServer { s in s.workers = 0 }
        let dispatcher = Self.dispatcher(server, deadline: .seconds(1), backoff: 0.2)
        #expect(dispatcher.leaseSeconds == 22 && dispatcher.leaseSeconds > dispatcher.deadline.seconds)
        let (accountId, _, _, job) = try await WebhookTests.failedJob(
            server, url: "http://127.0.0.1:\(tarpit.port)/hook")
        let delivering = Task { await dispatcher.deliverUntilCancelled() }
        defer { delivering.cancel() }

        #expect(
            try await Self.waitFor(15) { tarpit.seen.count >= 3 && tarpit.seen.allSatisfy { $0.closedByPeer != nil } },
            "\(tarpit.seen)")
        let spans = tarpit.seen.prefix(3).map { ($0.accepted, $0.closedByPeer ?? Date()) }
        for (accepted, closed) in spans {
            let held = closed.timeIntervalSince(accepted)
            #expect(held < 2, "an attempt at the tarpit lasted \(held) s")
        }
        for (earlier, later) in zip(spans, spans.dropFirst()) {
            #expect(later.0 >= earlier.1.addingTimeInterval(-0.15), "sent again while the attempt before was open")
        }
        let log = try await server.service.database.webhookDeliveries(jobId: job, accountId: accountId)
        let attempts = try #require(log.first?.attempts)
        #expect(attempts.count >= 2 && log.first?.delivery.status == .pending)
        for attempt in attempts {
            #expect(
                attempt.statusCode == nil
                    && attempt.error == "the endpoint could not be reached: no answer within 1 second"
                    && attempt.durationMs < 5000, "\(attempt)")
        }
    }

    /// 40 accounts whose endpoints are failing (each tried once already) point at a tarpit that
    /// never finishes its head, with a 2 s deadline: at most 8 of the dispatcher's 32 slots go to
    /// them, and another account's delivery, queued while they hold their slots, is delivered at
    /// once (measured: 0.03 s). Before (or with all 32 slots open to them), the 40 took all 32
    /// slots and the other delivery waited for one to end (measured: 3.0 s with a 3 s deadline).
    @Test func manyFailingEndpointsLeaveSlotsForTheOthers() async throws {
        let tarpit = try RawListener(host: "127.0.0.1", behaviour: .trickleHead(every: 0.5))
        defer { tarpit.stop() }
        let server = try await TestServer { s in s.workers = 0 }
        let store = server.service.database
        let receiver = WebhookTests.Receiver(failures: 0)
        try await receiver.run { url in
            for _ in 0..<40 {
                _ = try await WebhookTests.failedJob(server, url: "http://127.0.0.1:\(tarpit.port)/hook")
            }
            // Each tried once already (by a dispatcher that saw no answer), due again now.
            let claimed = try await store.claimDueWebhooks(worker: "before", leaseSeconds: 60, limit: 100, now: Date())
            #expect(claimed.count == 40)
            for claim in claimed {
                let attempt = WebhookAttempt(
                    deliveryId: claim.delivery.id, number: 1, at: Date(), statusCode: nil, error: "no answer",
                    durationMs: 10_000)
                #expect(
                    try await store.recordWebhookAttempt(
                        attempt, worker: "before", outcome: .retry(at: Date()), now: Date()))
            }

            let dispatcher = Self.dispatcher(server, deadline: .seconds(2), backoff: 0.05)
            let delivering = Task { await dispatcher.deliverUntilCancelled() }
            defer { delivering.cancel() }
            #expect(
                try await Self.waitFor(10) { dispatcher.failingInFlight == WebhookDispatcher.maxFailingInFlight },
                "the failing endpoints' share is in use")
            #expect(try await Self.waitFor(10) { tarpit.seen.count >= WebhookDispatcher.maxFailingInFlight })

            let (otherAccount, _, _, job) = try await WebhookTests.failedJob(server, url: url)
            let queued = Date()
            var delivered: Date?
            let deadline = Date().addingTimeInterval(10)
            while delivered == nil && Date() < deadline {
                let log = try await store.webhookDeliveries(jobId: job, accountId: otherAccount)
                if log.first?.delivery.status == .delivered { delivered = Date() }
                try await Task.sleep(for: .milliseconds(20))
            }
            let waited = try #require(delivered, "the other account's delivery was never delivered")
                .timeIntervalSince(queued)
            #expect(waited < 1, "another account's delivery waited \(waited) s behind the failing endpoints")
            #expect(receiver.received.count == 1)
            // Through a round of deadlines (the first attempts given up, the next ones started),
            // never more than the failing share was open at the tarpit at once.
            #expect(
                try await Self.waitFor(10) {
                    tarpit.seen.count >= 2 * WebhookDispatcher.maxFailingInFlight
                        && tarpit.seen.filter { $0.closedByPeer != nil }.count >= WebhookDispatcher.maxFailingInFlight
                })
            let most = Self.mostOpenAtOnce(tarpit)
            print(
                "failing endpoints: another account's delivery in \(String(format: "%.3f", waited)) s; at most \(most) attempts at them at once"
            )
            #expect(
                most >= 1 && most <= WebhookDispatcher.maxFailingInFlight,
                "\(most) attempts at failing endpoints at once")
        }
    }

    /// A registration whose host name does not resolve within the lookup deadline (0.5 s here) is
    /// answered then with a 400 that says what to do and names nothing internal; its slot is free
    /// at once, while the resolver's thread stays counted until it returns.
    @Test func aSlowLookupEndsRegistrationWithAClearError() async throws {
        let server = try await TestServer { s in s.workers = 0 }
        let gate = Gate()
        defer { gate.open() }
        let network = WebhookNetwork(resolve: { _ in
            while !gate.isOpen { Thread.sleep(forTimeInterval: 0.01) }
            throw POSIXError(.ETIMEDOUT)
        })
        let budget = WebhookLookupBudget(deadline: .milliseconds(500))
        server.service.webhooks.targets = WebhookTargetChecker(allowPrivate: false, network: network, budget: budget)
        try await withServer(server, .router) { client in
            let (_, key) = try await client.createAccount()
            let started = Date()
            let problem = try await WebhookTests.register(client, key: key, url: "https://tarpit.internal.example/hook")
                .expectProblem(.badRequest, code: "webhook_lookup_timeout")
            let took = Date().timeIntervalSince(started)
            #expect(took > 0.4 && took < 3, "answered after \(took) s")
            let detail = try #require(problem["detail"] as? String)
            #expect(detail.contains("did not resolve within 0.5 seconds") && detail.contains("DNS"), "\(detail)")
            for secret in ["tarpit", "internal", "ETIMEDOUT", "getaddrinfo", "thread"] {
                #expect(!detail.contains(secret), "\(secret) disclosed: \(detail)")
            }
            #expect(budget.waiting == 0 && budget.inResolver == 1)
            gate.open()
            #expect(try await Self.waitFor(5) { budget.inResolver == 0 })
        }
    }

    /// A client that sends a registration whose host name hangs in the resolver and then closes
    /// its connection frees the lookup's slot at once (the deadline is 30 s here): the account
    /// may register again right away. The resolver's thread stays counted until it returns.
    @Test func anAbandonedRegistrationFreesItsLookupAtOnce() async throws {
        let server = try await TestServer { s in s.workers = 0 }
        let gate = Gate()
        defer { gate.open() }
        let network = WebhookNetwork(resolve: { host in
            if host.hasPrefix("slow") {
                while !gate.isOpen { Thread.sleep(forTimeInterval: 0.01) }
                throw POSIXError(.ETIMEDOUT)
            }
            return ["93.184.215.14"]
        })
        let budget = WebhookLookupBudget(perAccount: 1, deadline: .seconds(30))
        server.service.webhooks.targets = WebhookTargetChecker(allowPrivate: false, network: network, budget: budget)
        // AsyncHTTPClient: the 503 below ends its connection (the body was not read); it opens another.
        try await withServer(server, .ahc(.http)) { client in
            let (_, key) = try await client.createAccount()
            let port = try #require(client.port)
            let body = #"{"url": "https://slow.example.net/hook"}"#
            let connection = try RawConnection(port: port)
            connection.send(
                "PUT /api/v1/account/webhook HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer \(key)\r\n"
                    + "Content-Type: application/json\r\nContent-Length: \(body.utf8.count)\r\n\r\n\(body)")
            #expect(try await Self.waitFor(10) { budget.waiting == 1 }, "the lookup started")
            // The account's one slot is taken: another registration is told to wait.
            try await WebhookTests.register(client, key: key, url: "https://fine.example.net/hook")
                .expectProblem(.serviceUnavailable, code: "webhook_lookup_busy")
            let left = Date()
            connection.close()
            #expect(try await Self.waitFor(5) { budget.waiting == 0 }, "the slot was freed when the client left")
            let freed = Date().timeIntervalSince(left)
            #expect(freed < 3, "the slot was freed \(freed) s after the client left")
            #expect(budget.inResolver == 1, "the resolver's thread is still counted")
            let again = try await WebhookTests.register(client, key: key, url: "https://fine.example.net/hook")
            #expect(again.status == .ok, "\(again.text)")
            gate.open()
            #expect(try await Self.waitFor(5) { budget.inResolver == 0 })
        }
    }
}
