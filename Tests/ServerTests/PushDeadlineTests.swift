import Foundation
import MediaVocabulary
import Logging
import MomentsConfig
import Push
import Store
import Testing

/// One deadline for a whole push, against a tarpit APNs (scripts/apns-standin answers the head at
/// once and then trickles the body a byte every 0.2 s): the send is given up at the deadline, a
/// 200 head counts (the push is not sent twice), and a push that is tried again is never sent while
/// its earlier send may still be in flight.
@Suite("Push notifications: deadlines")
struct PushDeadlineTests {
    /// The lease is derived from the deadline and outlasts every attempt (two sends), whatever the
    /// deadline: 60 s for pushes and 40 s for webhooks at the 10 s default.
    @Test func theLeaseOutlastsTheDeadline() {
        #expect(APNsClient.defaultDeadline.leaseSeconds(sends: 2) == 60)
        for seconds in [0.2, 1, 2.5, 10, 30] {
            let deadline = AttemptDeadline(.milliseconds(Int64(seconds * 1000)))
            #expect(deadline.leaseSeconds(sends: 2) > 2 * deadline.seconds + 10, "\(seconds) s")
            #expect(deadline.leaseSeconds(sends: 1) > deadline.seconds + 10, "\(seconds) s")
        }
        #expect(
            AttemptDeadline(.seconds(10)).spoken == "10 seconds" && AttemptDeadline(.seconds(1)).spoken == "1 second")
    }

    /// Three devices: a tarpit that answers 200, one that answers 503 (both trickle the body), and a
    /// good one, pushed by the real dispatcher loop with a 2 s deadline. Every tarpit send is given
    /// up within the deadline (measured: 2.0 s); the 200 tarpit's push is recorded as sent when its
    /// head came (APNs took it: not sent again); the 503 tarpit's is tried again, no send starting
    /// before the one before it ended; the good device is not held up. Each push reached the
    /// stand-in as many times as it was attempted. Before, the first send never ended, and the push
    /// was sent again when its lease ran out.
    @Test func aTarpitAPNsIsGivenUpAtTheDeadlineAndNotSentWhileInFlight() async throws {
        try await APNsStandIn.with { standIn in
            let server = try await TestServer { $0.workers = 0 }
            var settings = PushSettings()
            standIn.configure(&settings)
            let store = server.service.database
            let (account, _) = try await store.createAccount(label: nil, plan: "free", now: Date())
            let taken = APNsStandIn.token("7a2f", 1), refused = APNsStandIn.token("7a25", 2)
            let good = APNsStandIn.token("600d", 3)
            for token in [taken, refused, good] {
                _ = try await store.registerDevice(
                    accountId: account.id, token: token, environment: .production, limit: 20, now: Date())
            }
            let credentials = try #require(try APNsCredentials.load(settings))
            // The connection (TLS, HTTP/2) made first, with the default deadline: under load (16
            // tests at once on 2 cores) a handshake with the stand-in may itself take a second or more.
            let warm = APNsClient(credentials: credentials)
            let (warmed, _) = await warm.send(
                payload:
                    #"{"aps":{"alert":{"title":"t","body":"b"},"sound":"default"},"job_id":"w","status":"completed"}"#,
                token: APNsStandIn.token("600d", 9), environment: .production, collapseId: "w", now: Date())
            #expect(warmed.statusCode == 200, "\(warmed)")
            let deadline = AttemptDeadline(.seconds(2))
            let client = APNsClient(credentials: credentials, deadline: deadline)
            var logger = Logger(label: "push-test")
            logger.logLevel = .critical
            let dispatcher = PushDispatcher(
                database: store, client: client, settings: settings, worker: "test#pushes", logger: logger)
            #expect(dispatcher.leaseSeconds == 28 && dispatcher.leaseSeconds > 2 * deadline.seconds)

            let job = try await Self.failedJob(store, account: account.id)
            let sending = Task { await dispatcher.deliverUntilCancelled() }
            defer { sending.cancel() }

            // The 200 tarpit: given up at the deadline, recorded as sent once its head came (APNs
            // took it). (On a quiet machine its first send has the head: one attempt.)
            let pushes = try await Self.pushes(store, job: job, timeout: 15) { pushes in
                pushes.first { $0.token == taken }?.status == .sent
                    && pushes.first { $0.token == good }?.status == .sent
                    && (pushes.first { $0.token == refused }?.attempts ?? 0) >= 2
            }
            let takenPush = try #require(pushes.first { $0.token == taken })
            let goodPush = try #require(pushes.first { $0.token == good })
            #expect(takenPush.status == .sent && takenPush.lastStatusCode == 200, "\(takenPush)")
            let hits = try await standIn.hits()
            #expect(
                hits.filter { $0.token == taken }.count == takenPush.attempts,
                "each attempt sent once; none after the 200 head")
            #expect(hits.filter { $0.token == good }.count == goodPush.attempts && goodPush.status == .sent)

            // Every tarpit stream was ended by the dispatcher within the deadline (2 s; 1 s of
            // slack for a loaded machine), and no push's sends overlapped.
            let ended = try await Self.ended(standIn, timeout: 10) { ended in
                ended.filter { $0.token == taken }.count == takenPush.attempts
                    && ended.filter { $0.token == refused }.count >= 2
            }
            for stream in ended {
                let held = stream.ended - stream.received
                #expect(held < deadline.seconds + 1, "a tarpit send lasted \(held) s")
            }
            print("tarpit APNs sends held: \(ended.map { String(format: "%.2f", $0.ended - $0.received) }) s")
            let refusedHits = hits.filter { $0.token == refused }
            #expect(refusedHits.count >= 2 && refusedHits.allSatisfy { $0.status == 503 })
            for token in [taken, refused] {
                let streams = ended.filter { $0.token == token }.sorted { $0.received < $1.received }
                for (earlier, later) in zip(streams, streams.dropFirst()) {
                    #expect(
                        later.received >= earlier.ended - 0.05,
                        "sent again at \(later.received) while the send of \(earlier.received) was in flight until \(earlier.ended)"
                    )
                }
            }
            let refusedPush = try #require(pushes.first { $0.token == refused })
            #expect(refusedPush.status == .pending && refusedPush.lastStatusCode == 503, "\(refusedPush)")
        }
    }

    /// A job of `account` that failed (its pushes are queued with it).
    static func failedJob(_ store: any MomentsStore, account: String) async throws -> String {
        let job = Job(
            id: UUID().uuidString.lowercased(), accountId: account, targetDuration: 5, quality: .medium,
            input: JobInput(
                size: 1000, duration: 10, container: "mp4", videoCodec: "h264", audioCodec: nil, width: 320,
                height: 180, rotation: 0, frameRate: 30),
            estimatedSeconds: 5, now: Date())
        try await store.insertUnmetered(job)
        #expect(
            try await store.fail(
                id: job.id, worker: nil, code: "test", message: "Stopped by the test.", chargeSeconds: 0, now: Date()))
        return job.id
    }

    /// Polls the job's pushes until `done` holds (or `timeout` seconds pass); the last read either way.
    static func pushes(
        _ store: any MomentsStore, job: String, timeout: Double, until done: ([PushDelivery]) -> Bool
    ) async throws -> [PushDelivery] {
        let deadline = Date().addingTimeInterval(timeout)
        var last: [PushDelivery] = []
        while Date() < deadline {
            last = try await store.pushDeliveries(jobId: job)
            if done(last) { return last }
            try await Task.sleep(for: .milliseconds(50))
        }
        Issue.record(
            "the pushes did not reach the expected state: \(last.map { "\($0.token.prefix(4)) \($0.status) \($0.attempts)" })"
        )
        return last
    }

    /// Polls the stand-in's ended streams until `done` holds.
    static func ended(
        _ standIn: APNsStandIn, timeout: Double, until done: ([APNsStandIn.Ended]) -> Bool
    ) async throws -> [APNsStandIn.Ended] {
        let deadline = Date().addingTimeInterval(timeout)
        var last: [APNsStandIn.Ended] = []
        while Date() < deadline {
            last = try await standIn.ended()
            if done(last) { return last }
            try await Task.sleep(for: .milliseconds(50))
        }
        Issue.record("the tarpit's streams did not end as expected: \(last)")
        return last
    }
}
