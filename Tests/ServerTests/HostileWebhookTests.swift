import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Logging
import Store
import Synchronization
import Testing
import Webhooks

/// Webhook endpoints that fight back: one that trickles its answer, a name that resolves to a
/// public address for the check and to loopback for the connection, slow-resolving names, and
/// what the errors say about internal names.
@Suite("Hostile clients: webhooks", .onceAcrossEngines)
struct HostileWebhookTests {
    /// A server that may deliver to loopback (the trickler is local), with retries far off so
    /// each delivery is attempted once here.
    static func server() async throws -> TestServer {
        try await TestServer { s in
            s.workers = 0
            s.webhooks.allowPrivateTargets = true
            s.webhooks.retryBackoffSeconds = 120
            s.webhooks.pollSeconds = 0.2
        }
    }

    /// An event for `key`'s account: an upload cancelled at once (they cost nothing).
    static func event(_ client: any TestClientProtocol, key: String, video: Data) async throws -> String {
        let accepted = try await client.upload(key: key, file: video)
        #expect(accepted.status == .ok, "\(accepted.text)")
        let job = try #require(try accepted.json()["job_id"] as? String)
        #expect(try await client.get("/api/v1/jobs/\(job)", key: key, method: .delete).status == .ok)
        return job
    }

    static func waitFor(_ timeout: Double, _ condition: () -> Bool) async throws -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            if condition() { return true }
            try await Task.sleep(for: .milliseconds(50))
        }
        return condition()
    }

    /// Replays one account's endpoint answering `200` with `Content-Length: 60000` and then a byte
    /// every 2 s, over HTTP: another account's delivery, queued while the trickler is being
    /// answered, is delivered at once, and every attempt at the trickler ends well within the
    /// deadline (its body is not waited for; the connection is closed).
    @Test func aTricklingBodyHoldsUpNoOne() async throws {
        let trickler = try RawListener(host: "127.0.0.1", behaviour: .trickleBody(every: 2))
        defer { trickler.stop() }
        try await Self.withTrickler(trickler) { client, hostile, hostileJobs in

            // Every attempt at the trickler ended by the deadline, the connection closed by
            // the dispatcher; the answer's status counts.
            #expect(
                try await Self.waitFor(25) {
                    trickler.seen.count >= 3 && trickler.seen.allSatisfy { $0.closedByPeer != nil }
                },
                "\(trickler.seen)")
            for connection in trickler.seen {
                let held = (connection.closedByPeer ?? Date()).timeIntervalSince(connection.accepted)
                #expect(held < 11, "a trickled attempt lasted \(held) s")
            }
            for hostileJob in hostileJobs {
                let log = try await WebhookTests.deliveries(client, job: hostileJob, key: hostile, timeout: 30) {
                    (($0.first?["attempts"] as? [[String: Any]])?.count ?? 0) >= 1
                }
                let attempt = try #require((log.first?["attempts"] as? [[String: Any]])?.first)
                #expect((attempt["duration_ms"] as? Int ?? .max) < 11_000, "\(attempt)")
                #expect(attempt["status_code"] as? Int == 200, "\(attempt)")
            }
        }
    }

    /// An endpoint that trickles its answer's head (a byte every 2 s): each attempt ends by the
    /// 10 s deadline (the head has 8 s of it; "could not be reached"), the trickler's deliveries are attempted one at a
    /// time (it backs off alone), and another account's delivery is not held up meanwhile.
    @Test func aTricklingHeadEndsAtTheDeadlineAndHoldsUpNoOne() async throws {
        let trickler = try RawListener(host: "127.0.0.1", behaviour: .trickleHead(every: 2))
        defer { trickler.stop() }
        try await Self.withTrickler(trickler) { client, hostile, hostileJobs in
            // One attempt at a time at the slow endpoint: no two of its connections were open at
            // once (on a slow machine the first may already have ended and the next begun).
            let now = Date()
            let spans: [(start: Date, end: Date)] = trickler.seen.map { ($0.accepted, $0.closedByPeer ?? now) }
            var overlapping = false
            for i in spans.indices {
                for j in spans.indices where j > i {
                    if spans[j].start < spans[i].end && spans[i].start < spans[j].end { overlapping = true }
                }
            }
            let seen = spans
            #expect(!overlapping, "attempts at the slow endpoint overlapped: \(seen)")

            // The first attempt ends by the deadline: the head has 8 s of the attempt's 10.
            #expect(try await Self.waitFor(15) { trickler.seen.first?.closedByPeer != nil })
            let first = try #require(trickler.seen.first)
            let held = (first.closedByPeer ?? Date()).timeIntervalSince(first.accepted)
            #expect(held > 7 && held < 11, "the attempt lasted \(held) s")
            let log = try await WebhookTests.deliveries(client, job: hostileJobs[0], key: hostile, timeout: 30) {
                (($0.first?["attempts"] as? [[String: Any]])?.count ?? 0) >= 1
            }
            let attempt = try #require((log.first?["attempts"] as? [[String: Any]])?.first)
            let error = attempt["error"] as? String ?? ""
            #expect(
                attempt["status_code"] is NSNull && error.contains("could not be reached")
                    && error.contains("10 seconds"), "\(attempt)")
            #expect(
                (attempt["duration_ms"] as? Int ?? .max) < 12_000 && (attempt["duration_ms"] as? Int ?? 0) > 7_000,
                "\(attempt)")
            #expect(log.first?["status"] as? String == "pending", "tried again later")
        }
    }

    /// A server where one account's endpoint is `trickler` and another's a well-behaved receiver:
    /// three events of the first account (the trickler is called), then one of the other, whose
    /// delivery must not wait for the trickler. `body` gets the client, the first account's key
    /// and its three jobs.
    static func withTrickler(
        _ trickler: RawListener,
        _ body: @escaping @Sendable (any TestClientProtocol, String, [String]) async throws -> Void
    ) async throws {
        let server = try await Self.server()
        let receiver = WebhookTests.Receiver(failures: 0)
        let video = try await Fixtures.data(.tiny)
        try await receiver.run { url in
            try await withServer(server, .live) { client in
                let (_, hostile) = try await client.createAccount()
                let (_, other) = try await client.createAccount()
                #expect(
                    try await WebhookTests.register(client, key: hostile, url: "http://127.0.0.1:\(trickler.port)/hook")
                        .status == .ok)
                #expect(try await WebhookTests.register(client, key: other, url: url).status == .ok)
                var hostileJobs: [String] = []
                for _ in 0..<3 { hostileJobs.append(try await Self.event(client, key: hostile, video: video)) }
                #expect(try await Self.waitFor(15) { !trickler.seen.isEmpty }, "the trickler was never called")

                let job = try await Self.event(client, key: other, video: video)
                let queued = Date()
                _ = try await WebhookTests.deliveries(client, job: job, key: other, timeout: 30) {
                    $0.first?["status"] as? String == "delivered"
                }
                let waited = Date().timeIntervalSince(queued)
                #expect(waited < 6, "another account's delivery waited \(waited) s for the trickler")
                try await body(client, hostile, hostileJobs)
            }
        }
    }

    // MARK: Rebinding, lookups, errors

    /// A count several tasks add to.
    final class Counter: Sendable {
        let value = Mutex(0)
        var count: Int { value.withLock { $0 } }
        func add() { value.withLock { $0 += 1 } }
    }

    /// A flag one side raises and blocked resolvers watch.
    final class Gate: Sendable {
        let raised = Atomic<Bool>(false)
        var isOpen: Bool { raised.load(ordering: .relaxed) }
        func open() { raised.store(true, ordering: .relaxed) }
    }

    /// A resolver that answers `first` for the first lookup of `name` and `then` for every later
    /// one; other names do not resolve.
    final class RebindingResolver: Sendable {
        let name: String
        let answers: Mutex<[[String]]>
        let lookups = Mutex(0)

        init(name: String, first: [String], then: [String]) {
            self.name = name
            answers = Mutex([first, then])
        }

        func resolve(_ host: String) throws -> [String] {
            guard host == name else { throw POSIXError(.ENOENT) }
            lookups.withLock { $0 += 1 }
            return answers.withLock { answers in answers.count > 1 ? answers.removeFirst() : answers[0] }
        }
    }

    /// DNS rebinding: the name resolves to a "public" address for the check (127.0.0.2 stands in
    /// for one here) and to loopback afterwards. The connection goes to the checked address (the
    /// TLS ClientHello still names the host), never to what the system resolver says the name is
    /// (loopback); the next attempt checks again, is refused, and its error names neither the
    /// host nor the address.
    @Test func rebindingCannotReachLoopback() async throws {
        // The stand-in public endpoint, and loopback services on the same port.
        var attempt = 0
        var outside: RawListener?
        var inside: [RawListener] = []
        while outside == nil || inside.isEmpty {
            attempt += 1
            try #require(attempt < 20, "no port free on 127.0.0.2 and 127.0.0.1")
            let candidate = try RawListener(host: "127.0.0.2", behaviour: .recordOnly)
            guard let v4 = try? RawListener(host: "127.0.0.1", port: candidate.port, behaviour: .recordOnly) else {
                candidate.stop()
                continue
            }
            outside = candidate
            inside = [v4]
            if let v6 = try? RawListener(host: "::1", port: candidate.port, behaviour: .recordOnly) {
                inside.append(v6)
            }
        }
        let stand = try #require(outside)
        defer { stand.stop(); inside.forEach { $0.stop() } }

        let clock = TestClock(Date())
        let server = try await TestServer(clock: clock) { s in s.workers = 0 }
        #expect(server.service.settings.webhooks.allowPrivateTargets == false)
        let resolver = RebindingResolver(name: "localhost", first: ["127.0.0.2"], then: ["127.0.0.1"])
        let network = WebhookNetwork(
            resolve: { try resolver.resolve($0) },
            classify: { $0 == "127.0.0.2" ? nil : SpecialPurposeAddresses.classify($0) })
        var logger = Logger(label: "moments-test")
        logger.logLevel = .critical
        let dispatcher = WebhookDispatcher(
            database: server.service.database, settings: server.service.settings.webhooks,
            baseURL: server.service.settings.baseURL, worker: "test#webhooks", secret: server.service.serverSecret, logger: logger,
            clock: { clock.now })
        dispatcher.targets = WebhookTargetChecker(allowPrivate: false, network: network, budget: WebhookLookupBudget())
        let (accountId, _, _, job) = try await WebhookTests.failedJob(
            server, url: "https://localhost:\(stand.port)/hook", now: clock.now)

        #expect(await dispatcher.deliverDue() == 1)
        // (The HTTP client tries the connection again while its deadline lasts: each to the same address.)
        let reached = stand.seen.count
        #expect(reached >= 1, "the checked address was connected to")
        #expect(inside.allSatisfy { $0.seen.isEmpty }, "the system resolver's answer (loopback) was never connected to")
        for hello in stand.seen.map(\.firstBytes) {
            #expect(hello.first == 0x16, "a TLS handshake")
            #expect(hello.firstRange(of: Array("localhost".utf8)) != nil, "the ClientHello names the URL's host (SNI)")
        }

        // The name now resolves to loopback: checked again, refused, nothing sent anywhere.
        clock.now = clock.now.addingTimeInterval(3600)
        #expect(await dispatcher.deliverDue() == 1)
        #expect(resolver.lookups.withLock { $0 } == 2)
        #expect(stand.seen.count == reached && inside.allSatisfy { $0.seen.isEmpty })
        let log = try await server.service.database.webhookDeliveries(jobId: job, accountId: accountId)
        let attempts = try #require(log.first?.attempts)
        #expect(attempts.count == 2)
        let error = try #require(attempts.last?.error)
        #expect(error.contains("could not be reached"), "\(error)")
        for secret in ["127.0.0.1", "127.0.0.2", "localhost", "loopback", "::1"] {
            #expect(!attempts.compactMap(\.error).joined().contains(secret), "\(secret) disclosed: \(attempts)")
        }
    }

    /// One account registering slow-resolving names uses up its own share of the lookups only:
    /// another account's registration goes through at once. With a single budget shared by all
    /// accounts (the limit this replaces), the same burst refuses the other account.
    @Test func slowNamesOfOneAccountStarveNoOther() async throws {
        for shared in [true, false] {
            let server = try await TestServer { s in s.workers = 0 }
            let release = Gate()
            let network = WebhookNetwork(resolve: { host in
                if host.hasPrefix("slow-") {
                    let until = Date().addingTimeInterval(20)
                    while !release.isOpen && Date() < until { Thread.sleep(forTimeInterval: 0.02) }
                    throw POSIXError(.ETIMEDOUT)
                }
                return ["93.184.215.14"]
            })
            // A long lookup deadline: the burst's lookups are ended by the gate, not on their own.
            let budget =
                shared
                ? WebhookLookupBudget(total: 32, perAccount: 32, deadline: .seconds(120))
                : WebhookLookupBudget(deadline: .seconds(120))
            server.service.webhooks.targets = WebhookTargetChecker(
                allowPrivate: false, network: network, budget: budget)
            try await withServer(server, .router) { client in
                let (_, hostile) = try await client.createAccount()
                let (_, other) = try await client.createAccount()
                // The hostile account's burst: 40 registrations of names that take long to resolve.
                let answered = Counter()
                let burst = Task {
                    try await withThrowingTaskGroup(of: Int.self) { group in
                        for n in 0..<40 {
                            group.addTask {
                                let status = Int(
                                    try await WebhookTests.register(
                                        client, key: hostile, url: "https://slow-\(n).example.net/hook"
                                    ).status.code)
                                answered.add()
                                return status
                            }
                        }
                        return try await group.reduce(into: [Int]()) { $0.append($1) }
                    }
                }
                // Every request of the burst is in: those over the limit answered, the rest resolving.
                let held = min(budget.total, budget.perAccount)
                #expect(
                    try await Self.waitFor(20) { budget.waiting >= held && answered.count >= 40 - held },
                    "\(answered.count) answered")
                let started = Date()
                let response = try await WebhookTests.register(client, key: other, url: "https://fine.example.net/hook")
                let took = Date().timeIntervalSince(started)
                release.open()
                let statuses = try await burst.value
                if shared {
                    // The old single limit: the other account is refused while the burst lasts.
                    #expect(response.status == .serviceUnavailable, "\(response.text)")
                } else {
                    #expect(response.status == .ok, "\(response.text)")
                    #expect(took < 2, "the other account's registration took \(took) s")
                    let refused = statuses.filter { $0 == 503 }.count
                    #expect(refused == 40 - budget.perAccount, "the hostile account's own share: \(statuses)")
                    let problem = try await WebhookTests.register(
                        client, key: hostile, url: "https://slow-x.example.net/hook")
                    #expect(problem.status == .badRequest, "its share is free again: \(problem.text)")
                }
            }
        }
    }

    /// Registration errors name no resolved address and no internal host: a name that resolves to
    /// a private address reads like one that does not resolve.
    @Test func registrationErrorsDiscloseNoInternalNames() async throws {
        let server = try await TestServer { s in s.workers = 0 }
        let network = WebhookNetwork(resolve: { host in
            switch host {
            case "vm.internal.example": return ["127.0.0.1"]
            case "db.internal.example": return ["10.1.2.3", "93.184.215.14"]
            case "nat64.internal.example": return ["64:ff9b:1::a01:203"]
            default: throw POSIXError(.ENOENT)
            }
        })
        server.service.webhooks.targets = WebhookTargetChecker(
            allowPrivate: false, network: network, budget: WebhookLookupBudget())
        try await withServer(server, .router) { client in
            let (_, key) = try await client.createAccount()
            var details: [String] = []
            for host in [
                "vm.internal.example", "db.internal.example", "nat64.internal.example", "nowhere.internal.example"
            ] {
                let problem = try await WebhookTests.register(client, key: key, url: "https://\(host)/hook")
                    .expectProblem(.badRequest, code: "webhook_unresolvable")
                let detail = try #require(problem["detail"] as? String)
                #expect(detail.contains("could not be reached"), "\(detail)")
                for secret in [host, "127.0.0.1", "10.1.2.3", "64:ff9b", "loopback", "private", "internal"] {
                    #expect(!detail.contains(secret), "\(secret) disclosed: \(detail)")
                }
                details.append(detail)
            }
            #expect(Set(details).count == 1, "resolving to a private address reads like not resolving: \(details)")
        }
    }
}
