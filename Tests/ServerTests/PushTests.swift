import Foundation
import MediaVocabulary
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Logging
import MomentsConfig
import Push
import Store
import Testing

/// Pushes to phones through a local APNs stand-in (scripts/apns-standin: TLS, HTTP/2, the provider
/// token checked with the key's public half), on the engines MOMENTS_TEST_ENGINE names.
@Suite("Push notifications")
struct PushTests {
    typealias Hit = APNsStandIn.Hit

    static func register(
        _ client: any TestClientProtocol, key: String, token: String, environment: String = "production"
    ) async throws -> TestResponse {
        try await client.executeRequest(
            uri: "/api/v1/account/devices/\(token)", method: .put,
            headers: [.authorization: "Bearer \(key)", .contentType: "application/json"],
            body: ByteBuffer(string: "{\"environment\": \"\(environment)\"}"))
    }

    /// Every request the way Apple checks it: nothing the stand-in found wrong, HTTP/2, the headers.
    static func expectLikeApple(_ hit: Hit, job: String, sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(hit.problems.isEmpty, "\(hit.problems)", sourceLocation: sourceLocation)
        #expect(hit.http_version == "2", sourceLocation: sourceLocation)
        #expect(hit.path == "/3/device/\(hit.token)" && hit.topic == APNsStandIn.topic, sourceLocation: sourceLocation)
        #expect(
            hit.push_type == "alert" && hit.priority == "10" && hit.collapse_id == job, sourceLocation: sourceLocation)
        #expect(
            hit.jwt_header?.alg == "ES256" && hit.jwt_header?.kid == APNsStandIn.keyId, sourceLocation: sourceLocation)
        #expect(hit.claims?.iss == APNsStandIn.teamId && hit.claims?.iat != nil, sourceLocation: sourceLocation)
    }

    /// The required test: a completed job pushes once to each good device (production and sandbox,
    /// each at its endpoint), a flaky device gets it after a retry, a dead device and a bad token are
    /// removed, a stalled device holds up nobody (nor the job's webhook), another account's device
    /// gets nothing, and one provider token serves every push. The first push leaves within a
    /// second of the job's end.
    @Test func completedJobIsPushedToEachGoodDeviceOnce() async throws {
        let receiver = WebhookTests.Receiver(failures: 0)
        try await APNsStandIn.with { standIn in
            let server = try await TestServer { s in
                standIn.configure(&s.push)
                s.webhooks.allowPrivateTargets = true
                s.webhooks.pollSeconds = 0.2
            }
            let video = try await Fixtures.data(.short)
            try await receiver.run { webhookURL in
                try await withServer(server, .live) { client in
                    let (accountId, key) = try await client.createAccount()
                    #expect(try await WebhookTests.register(client, key: key, url: webhookURL).status == .ok)
                    let (_, otherKey) = try await client.createAccount()
                    let d = Devices()
                    try await Self.registerDevices(d, client, key: key, otherKey: otherKey)

                    let accepted = try await client.upload(key: key, file: video, fields: [("target_duration", "5")])
                    let job = try #require(try accepted.json()["job_id"] as? String, "\(accepted.text)")
                    _ = try await client.poll(job: job, key: key) { $0["status"] as? String == "completed" }

                    // The webhook is not held up by the pushes (one of which APNs never answers).
                    let webhookDeadline = Date().addingTimeInterval(5)
                    while receiver.received.isEmpty && Date() < webhookDeadline {
                        try await Task.sleep(for: .milliseconds(20))
                    }
                    let webhookSeen = Date()
                    #expect(receiver.received.count == 1, "the job's webhook arrived")

                    let byToken = try await Self.expectEachGoodDeviceOnce(d, standIn: standIn, job: job)
                    let good = d.good, sandbox = d.sandbox, flaky = d.flaky, stalled = d.stalled

                    // Promptly after the job's end (the store's finishedAt; both clocks are this machine's):
                    // within about a second on a quiet box; 2 s here, as this suite runs 16 tests at once on
                    // 2 cores (1.19 s was seen under that load on PostgreSQL).
                    let finished = try #require(try await server.service.database.job(id: job)?.finishedAt)
                    let latency = try #require(byToken[good]?.first?.received) - finished.timeIntervalSince1970
                    print("push latency: job end to APNs receipt \(String(format: "%.3f", latency)) s")
                    #expect(latency < 2.0, "job end to push: \(latency) s")
                    #expect(
                        webhookSeen.timeIntervalSince(finished) < 2,
                        "job end to webhook: \(webhookSeen.timeIntervalSince(finished)) s")

                    // The dead device and the bad token are gone; the others stay.
                    try await Self.expectDevices(client, key: key, [good, sandbox, flaky, stalled])

                    // APNs has answered each; the dispatcher records an answer just after it reads it.
                    let database = server.service.database
                    var pushes = try await database.pushDeliveries(jobId: job)
                    _ = try await eventually(within: 10) {
                        pushes = try await database.pushDeliveries(jobId: job)
                        return Set(pushes.filter { $0.status == .sent }.map(\.token)) == [good, sandbox, flaky]
                    }
                    #expect(pushes.count == 6 && pushes.allSatisfy { $0.accountId == accountId && $0.jobId == job })
                    #expect(Set(pushes.filter { $0.status == .sent }.map(\.token)) == [good, sandbox, flaky])

                    try await Self.expectPushMetrics(client)
                }
            }
        }
    }

    /// The test's devices: two good ones (production, sandbox), one APNs answers 503 first, one it
    /// no longer knows, a bad token, one it never answers, and another account's.
    struct Devices {
        let good = APNsStandIn.token("600d", 1), sandbox = APNsStandIn.token("600d", 2),
            flaky = APNsStandIn.token("f1a", 3)
        let dead = APNsStandIn.token("dead", 4), bad = APNsStandIn.token("bad0", 5),
            stalled = APNsStandIn.token("57a1", 6)
        let others = APNsStandIn.token("600d", 7)
    }

    /// Registers the account's devices (the sandbox one twice, in upper case first) and the other
    /// account's.
    static func registerDevices(
        _ d: Devices, _ client: any TestClientProtocol, key: String, otherKey: String
    ) async throws {
        let good = d.good, sandbox = d.sandbox, flaky = d.flaky, dead = d.dead, bad = d.bad, stalled = d.stalled
        let others = d.others
        for token in [good, flaky, dead, bad, stalled] {
            #expect(try await Self.register(client, key: key, token: token).status == .created)
        }
        // Upper case is the same token; PUT again answers 200.
        #expect(
            try await Self.register(client, key: key, token: sandbox.uppercased(), environment: "sandbox")
                .status == .created)
        #expect(
            try await Self.register(client, key: key, token: sandbox, environment: "sandbox").status == .ok)
        #expect(try await Self.register(client, key: otherKey, token: others).status == .created)
    }

    /// What the stand-in received once every device was answered: each good device once at its
    /// endpoint, the flaky one after a retry, the refused ones once, the other account's never, one
    /// provider token, the payload. The hits by token.
    static func expectEachGoodDeviceOnce(
        _ d: Devices, standIn: APNsStandIn, job: String
    ) async throws -> [String: [Hit]] {
        let good = d.good, sandbox = d.sandbox, flaky = d.flaky, dead = d.dead, bad = d.bad, stalled = d.stalled
        let others = d.others
        let hits = try await standIn.hits { hits in
            let answered = { (token: String, status: Int) in
                hits.contains { $0.token == token && $0.status == status }
            }
            return answered(good, 200) && answered(sandbox, 200) && answered(flaky, 200)
                && answered(dead, 410) && answered(bad, 400)
                && hits.contains { $0.token == stalled }
        }
        for hit in hits { Self.expectLikeApple(hit, job: job) }
        let byToken = Dictionary(grouping: hits, by: \.token)
        #expect(byToken[good]?.count == 1 && byToken[sandbox]?.count == 1, "each good device once")
        #expect(byToken[good]?.first?.authority == "127.0.0.1:\(standIn.port)")
        #expect(
            byToken[sandbox]?.first?.authority == "localhost:\(standIn.port)",
            "sandbox devices go to the sandbox endpoint")
        let flakyHits = try #require(byToken[flaky])
        #expect(flakyHits.map(\.status) == [503, 200], "\(flakyHits.map(\.status))")
        if flakyHits.count == 2 {
            #expect(
                flakyHits[1].received - flakyHits[0].received >= 0.25,
                "the retry waits apns.retryBackoffSeconds")
        }
        #expect(
            byToken[dead]?.count == 1 && byToken[bad]?.count == 1,
            "a device APNs refuses for good is not tried again")
        #expect(byToken[others] == nil, "another account's device gets nothing")
        #expect(Set(hits.compactMap(\.authorization)).count == 1, "one provider token serves every push")

        let payload = try #require(byToken[good]?.first?.payload)
        #expect(payload.job_id == job && payload.status == "completed" && payload.aps.sound == "default")
        #expect(
            payload.aps.alert.title == "Your highlight is ready"
                && payload.aps.alert.body.contains("ready to watch"))

        return byToken
    }

    /// The account's devices are `tokens`, and its pushes are on.
    static func expectDevices(
        _ client: any TestClientProtocol, key: String, _ tokens: Set<String>,
        sourceLocation: SourceLocation = #_sourceLocation
    ) async throws {
        let devices = try await client.get("/api/v1/account/devices", key: key).json()
        let listed = Set((devices["devices"] as? [[String: Any]] ?? []).compactMap { $0["token"] as? String })
        #expect(listed == tokens, "\(listed)", sourceLocation: sourceLocation)
        #expect(devices["push_enabled"] as? Bool == true, sourceLocation: sourceLocation)
    }

    /// The metrics count the pushes sent and a failure for each of APNs's refusals.
    static func expectPushMetrics(_ client: any TestClientProtocol) async throws {
        let (_, metrics) = try await client.metrics()
        #expect((metrics.value("moments_pushes_sent_total") ?? 0) >= 3, "\(metrics.text)")
        #expect((metrics.value("moments_push_failures_total", ["reason": "Unregistered"]) ?? 0) >= 1)
        #expect((metrics.value("moments_push_failures_total", ["reason": "BadDeviceToken"]) ?? 0) >= 1)
        #expect((metrics.value("moments_push_failures_total", ["reason": "ServiceUnavailable"]) ?? 0) >= 1)
    }

    /// Two dispatchers (two worker processes, as far as the store can tell) sending the same outbox
    /// at once: every push reaches APNs exactly once.
    @Test func twoDispatchersSendEachPushOnce() async throws {
        try await APNsStandIn.with { standIn in
            let server = try await TestServer { $0.workers = 0 }
            var settings = PushSettings()
            standIn.configure(&settings)
            let credentials = try #require(try APNsCredentials.load(settings))
            let store = server.service.database
            let (account, _) = try await store.createAccount(label: nil, plan: "free", now: Date())
            let tokens = (1...4).map { APNsStandIn.token("600d", $0) }
            for token in tokens {
                _ = try await store.registerDevice(
                    accountId: account.id, token: token, environment: .production, limit: 20, now: Date())
            }
            var jobs: [String] = []
            for _ in 0..<10 {
                let job = Job(
                    id: UUID().uuidString.lowercased(), accountId: account.id, targetDuration: 5, quality: .medium,
                    input: JobInput(
                        size: 1000, duration: 10, container: "mp4", videoCodec: "h264", audioCodec: nil, width: 320,
                        height: 180, rotation: 0, frameRate: 30),
                    estimatedSeconds: 5, now: Date())
                try await store.insertUnmetered(job)
                #expect(
                    try await store.fail(
                        id: job.id, worker: nil, code: "test", message: "Stopped by the test.", chargeSeconds: 0,
                        now: Date()))
                jobs.append(job.id)
            }
            var logger = Logger(label: "push-test")
            logger.logLevel = .warning
            let dispatchers = (0..<2).map { index in
                PushDispatcher(
                    database: store, client: APNsClient(credentials: credentials), settings: settings,
                    worker: "test-process-\(index)#pushes",
                    logger: logger)
            }
            let sent = await withTaskGroup(of: Int.self) { group in
                for dispatcher in dispatchers {
                    group.addTask {
                        var total = 0
                        for _ in 0..<5 { total += await dispatcher.sendDue() }
                        return total
                    }
                }
                return await group.reduce(0, +)
            }
            #expect(sent == 40, "attempts made by the two dispatchers")
            // The dispatchers have returned, so every request they sent was answered, and the
            // stand-in logs a request before it answers: the log is complete now.
            let final = try await standIn.hits()
            #expect(final.count == 40)
            let pairs = final.map { "\($0.token) \($0.collapse_id ?? "")" }
            #expect(Set(pairs).count == 40, "no push sent twice")
            #expect(Set(final.compactMap(\.collapse_id)) == Set(jobs))
            for id in jobs {
                let pushes = try await store.pushDeliveries(jobId: id)
                #expect(pushes.count == 4 && pushes.allSatisfy { $0.status == .sent && $0.attempts == 1 })
            }
            // Each dispatcher signed its own provider token (two processes), each used for all its pushes.
            #expect(Set(final.compactMap(\.authorization)).count <= 2)
        }
    }

    /// 403 ExpiredProviderToken: a new provider token is signed and the push sent again at once,
    /// within the same attempt; later pushes use the new token.
    @Test func anExpiredProviderTokenIsReplacedAndThePushSentAgain() async throws {
        try await APNsStandIn.with { standIn in
            let server = try await TestServer { $0.workers = 0 }
            var settings = PushSettings()
            standIn.configure(&settings)
            let store = server.service.database
            let (account, _) = try await store.createAccount(label: nil, plan: "free", now: Date())
            let expired = APNsStandIn.token("e4b1", 1), good = APNsStandIn.token("600d", 2)
            _ = try await store.registerDevice(
                accountId: account.id, token: expired, environment: .production, limit: 20, now: Date())
            let job = Job(
                id: UUID().uuidString.lowercased(), accountId: account.id, targetDuration: 5, quality: .medium,
                input: JobInput(
                    size: 1000, duration: 10, container: "mp4", videoCodec: "h264", audioCodec: nil, width: 320,
                    height: 180, rotation: 0, frameRate: 30),
                estimatedSeconds: 5, now: Date())
            try await store.insertUnmetered(job)
            #expect(
                try await store.fail(
                    id: job.id, worker: nil, code: "test", message: "Stopped by the test.", chargeSeconds: 0,
                    now: Date()))
            let client = APNsClient(credentials: try #require(try APNsCredentials.load(settings)))
            let dispatcher = PushDispatcher(
                database: store, client: client, settings: settings, worker: "test#pushes",
                logger: Logger(label: "push-test"))
            #expect(await dispatcher.sendDue() == 1)
            let hits = try await standIn.hits { $0.count >= 2 }
            #expect(hits.map(\.status) == [403, 200] && hits.map(\.token) == [expired, expired])
            #expect(
                hits.count == 2 && hits[0].authorization != hits[1].authorization,
                "a new provider token for the second send")
            #expect(hits.count == 2 && hits[1].received - hits[0].received < 1, "sent again at once")
            #expect(await client.tokens.signedCount == 2)
            let pushes = try await store.pushDeliveries(jobId: job.id)
            #expect(pushes.first?.status == .sent && pushes.first?.attempts == 1)

            // The next push reuses the new token.
            _ = try await store.registerDevice(
                accountId: account.id, token: good, environment: .production, limit: 20, now: Date())
            var second = job
            second.id = UUID().uuidString.lowercased()
            second.status = .pending
            try await store.insertUnmetered(second)
            #expect(
                try await store.fail(
                    id: second.id, worker: nil, code: "test", message: "Stopped by the test.", chargeSeconds: 0,
                    now: Date()))
            #expect(await dispatcher.sendDue() == 2)
            let later = try await standIn.hits { $0.count >= 4 }
            #expect(
                Set(later.dropFirst(2).map(\.authorization)) == [hits.last?.authorization],
                "the replacement serves the next pushes")
            #expect(await client.tokens.signedCount == 2)
        }
    }
}
