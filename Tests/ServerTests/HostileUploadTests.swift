import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import MomentsConfig
import HTTPEdge
import MomentsServer
import Store
import Testing
@testable import Uploads

/// Hostile clients against uploads, replayed over HTTP: parallel resumable creations from a
/// one-job-at-a-time account, one account's slow appends taking the server's upload slots, an
/// append past the plan's size limit without a Content-Length, an expired upload revived by an
/// append, and long requests outliving their key's revocation.
@Suite("Hostile clients: uploads")
struct HostileUploadTests {
    static let tus = [("Tus-Resumable", "1.0.0")]

    /// A tus creation (201) with `length` declared, or deferred when nil; its Location.
    static func createTus(_ wire: Wire, key: String, length: Int?) async throws -> String {
        let declared = length.map { [("Upload-Length", String($0))] } ?? [("Upload-Defer-Length", "1")]
        let created = try await wire.send(
            .POST, "/api/v1/uploads", key: key, headers: tus + declared + [("Upload-Metadata", "target_duration MTA=")])
        #expect(created.status == 201, "\(created.text)")
        return try #require(created.header("Location"))
    }

    /// Sixty tus creations at once from a free account that runs one job at a time: one upload is
    /// receiving, every other creation is refused with a 429 problem that says what to do.
    @Test func parallelTusCreatesFromALimitOneAccountAdmitOne() async throws {
        var plans = TestServer.roomyPlans
        plans.free.concurrentJobs = 1
        let server = try await TestServer(plans: plans) { $0.workers = 0 }
        try await withServer(server, .live) { client in
            let wire = try Wire(client)
            let (accountId, key) = try await client.createAccount()
            let replies = try await withThrowingTaskGroup(of: Wire.Reply.self) { group in
                for _ in 0..<60 {
                    group.addTask {
                        try await wire.send(
                            .POST, "/api/v1/uploads", key: key,
                            headers: Self.tus + [
                                ("Upload-Length", "100000"), ("Upload-Metadata", "target_duration MTA=")
                            ])
                    }
                }
                return try await group.reduce(into: [Wire.Reply]()) { $0.append($1) }
            }
            #expect(replies.filter { $0.status == 201 }.count == 1, "\(replies.map(\.status))")
            let refused = replies.filter { $0.status != 201 }
            #expect(refused.allSatisfy { $0.status == 429 }, "\(refused.map(\.status))")
            for reply in refused {
                #expect(reply.header("Content-Type") == "application/problem+json")
                #expect(
                    reply.text.contains("too_many_jobs") && Int(reply.header("Retry-After") ?? "") ?? 0 > 0,
                    "\(reply.text)")
            }
            // The refusal tells the user what to do about the upload that holds the place.
            let detail = try #require(refused.first.flatMap { try? $0.json()["detail"] as? String })
            #expect(detail.contains("DELETE"), "\(detail)")
            #expect(try await server.service.database.receivingUploads(accountId: accountId, now: Date(), activeSince: .distantPast) == 1)
            // A plain upload is refused the same way while the resumable one holds the place.
            let plain = try await client.upload(key: key, file: Data(repeating: 1, count: 1000))
            try plain.expectProblem(.tooManyRequests, code: "too_many_jobs")
        }
    }

    /// An upload past its expiry that the sweeper has not reached yet stays dead: the offset
    /// request answers 410, an append is refused with 410 and does not bring it back.
    @Test func expiredUploadStaysDead() async throws {
        let clock = TestClock(Date())
        let server = try await TestServer(clock: clock) {
            $0.workers = 0; $0.resumableExpiryHours = 1
        }
        try await withServer(server, .live) { client in
            let wire = try Wire(client)
            let (_, key) = try await client.createAccount()
            let location = try await Self.createTus(wire, key: key, length: 1000)
            let first = try await wire.send(
                .PATCH, location, key: key,
                headers: Self.tus + [
                    ("Content-Type", "application/offset+octet-stream"), ("Upload-Offset", "0")
                ], body: Data(repeating: 7, count: 100))
            #expect(first.status == 204, "\(first.text)")
            #expect(try await wire.send(.HEAD, location, key: key, headers: Self.tus).header("Upload-Offset") == "100")
            clock.now = clock.now.addingTimeInterval(3700)
            let head = try await wire.send(.HEAD, location, key: key, headers: Self.tus)
            #expect(head.status == 410)
            let revive = try await wire.send(
                .PATCH, location, key: key,
                headers: Self.tus + [
                    ("Content-Type", "application/offset+octet-stream"), ("Upload-Offset", "100")
                ], body: Data(repeating: 7, count: 100))
            #expect(revive.status == 410, "\(revive.text)")
            #expect(revive.header("Content-Type") == "application/problem+json")
            #expect((try? revive.json()["detail"] as? String)?.contains("Start a new upload") == true, "\(revive.text)")
            let after = try await wire.send(.HEAD, location, key: key, headers: Self.tus)
            #expect(after.status == 410)
            let state = try await wire.send(.GET, location, key: key).json()
            #expect(state["state"] as? String == "expired" && state["offset"] as? Int == 100, "\(state)")
            // Its place against jobs at once is free again.
            _ = try await Self.createTus(wire, key: key, length: 1000)
        }
    }

    /// The head of a tus append whose body is still to come, on a connection of its own; the
    /// first answer (100 when the body is invited).
    static func startAppend(port: Int, key: String, location: String, length: Int) async throws -> (
        RawConnection, RawConnection.Response?
    ) {
        try await RawConnection.offPool {
            let connection = try RawConnection(port: port)
            connection.send(
                "PATCH \(location) HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer \(key)\r\nTus-Resumable: 1.0.0\r\n"
                    + "Content-Type: application/offset+octet-stream\r\nUpload-Offset: 0\r\nContent-Length: \(length)\r\n"
                    + "Expect: 100-continue\r\n\r\n")
            return (connection, connection.readResponse(timeout: 10))
        }
    }

    /// One account's slow appends cannot take every server-wide upload slot: past its share
    /// (`upload.maxConcurrentPerAccount`, by default a quarter of `upload.maxConcurrent`) its next
    /// append is refused with 429, and another account still uploads, plainly and resumably.
    @Test func slowAppendsFromOneAccountLeaveSlotsForOthers() async throws {
        let server = try await TestServer {
            $0.workers = 0; $0.maxConcurrentUploads = 8
        }
        let video = try await Fixtures.data(.tiny)
        try await withServer(server, .live) { client in
            let wire = try Wire(client)
            let port = try #require(client.port)
            let (_, mallory) = try await client.createAccount()
            let (_, alice) = try await client.createAccount()
            var held: [RawConnection] = []
            defer { for connection in held { connection.close() } }
            var invited = 0
            var refused: [RawConnection.Response] = []
            for _ in 0..<8 {
                let location = try await Self.createTus(wire, key: mallory, length: 10_000_000)
                let (connection, answer) = try await Self.startAppend(
                    port: port, key: mallory, location: location, length: 10_000_000)
                held.append(connection)
                if answer?.status == 100 {
                    invited += 1
                    // Bytes above the stall floor keep it alive.
                    try await RawConnection.offPool { connection.send([UInt8](repeating: 1, count: 64 * 1024)) }
                } else if let answer {
                    refused.append(answer)
                }
            }
            #expect(invited == 2, "one account holds a quarter of the slots")
            #expect(
                refused.count == 6 && refused.allSatisfy { $0.status == 429 && $0.body.contains("too_many_uploads") },
                "\(refused.map(\.head))")
            #expect(refused.allSatisfy { Int($0.header("Retry-After") ?? "") ?? 0 > 0 })
            // Another account still uploads while the slow ones hold their slots.
            let (plain, answer) = try await TransportLimitTests.startUpload(port: port, key: alice)
            plain.close()
            #expect(answer?.status == 100, "\(answer?.head ?? "none")\(answer?.body ?? "")")
            let location = try await Self.createTus(wire, key: alice, length: video.count)
            let whole = try await wire.send(
                .PATCH, location, key: alice,
                headers: Self.tus + [
                    ("Content-Type", "application/offset+octet-stream"), ("Upload-Offset", "0")
                ], body: video)
            #expect(whole.status == 204 && whole.header("Moments-Job-Id") != nil, "\(whole.text)")
        }
    }

    /// An append past the plan's size limit is refused with 413 whatever its framing: chunked
    /// (tus with a deferred length, an IETF upload with no length), not a 204 that keeps the
    /// bytes. The recorded offset stays within the limit.
    @Test(arguments: ["tus", "ietf"])
    func chunkedAppendPastThePlanLimitIs413(flavor: String) async throws {
        var plans = TestServer.roomyPlans
        plans.free.maxUploadBytes = 100_000
        let server = try await TestServer(plans: plans) { $0.workers = 0 }
        try await withServer(server, .live) { client in
            let wire = try Wire(client)
            let port = try #require(client.port)
            let (_, key) = try await client.createAccount()
            let location: String
            let protocolHead: String
            if flavor == "tus" {
                location = try await Self.createTus(wire, key: key, length: nil)
                protocolHead = "Tus-Resumable: 1.0.0\r\nContent-Type: application/offset+octet-stream\r\n"
            } else {
                let created = try await wire.send(
                    .POST, "/api/v1/uploads", key: key,
                    headers: [("Upload-Draft-Interop-Version", "6"), ("Upload-Complete", "?0")])
                #expect(created.status == 201, "\(created.text)")
                location = try #require(created.header("Location"))
                protocolHead =
                    "Upload-Draft-Interop-Version: 6\r\nUpload-Complete: ?1\r\nContent-Type: application/partial-upload\r\n"
            }
            let answer = try await RawConnection.offPool { () -> RawConnection.Response? in
                let connection = try RawConnection(port: port)
                defer { connection.close() }
                connection.send(
                    "PATCH \(location) HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer \(key)\r\n\(protocolHead)"
                        + "Upload-Offset: 0\r\nTransfer-Encoding: chunked\r\n\r\n")
                // 7 chunks of 16 KiB: 112 KiB, past the 100 kB limit with the last one (the
                // answer comes before the body's end, which is not sent).
                let chunk = [UInt8](repeating: 0x42, count: 16 * 1024)
                for _ in 0..<7 {
                    guard connection.send(Array("4000\r\n".utf8) + chunk + Array("\r\n".utf8)) else { break }
                }
                return connection.readResponse(timeout: 15)
            }
            let response = try #require(answer, "no answer to an append past the limit")
            #expect(response.status == 413, "\(response.head)\(response.body)")
            #expect(response.header("Content-Type") == "application/problem+json")
            #expect(response.body.contains("file_too_large"), "\(response.body)")
            expectNoInternals(response.body, server: server)
            let state = try await wire.send(.GET, location, key: key).json()
            let offset = try #require(state["offset"] as? Int)
            #expect(offset <= 100_000, "\(state)")
        }
    }

    /// A key revoked while its append is slowly sending ends that append within a few seconds
    /// (well before the stall timeout), and the bytes already received are kept.
    @Test func revokedKeyEndsALongAppend() async throws {
        let server = try await TestServer { $0.workers = 0 }
        try await withServer(server, .live) { client in
            let wire = try Wire(client)
            let port = try #require(client.port)
            let (accountId, key) = try await client.createAccount()
            let location = try await Self.createTus(wire, key: key, length: 10_000_000)
            let (connection, answer) = try await Self.startAppend(
                port: port, key: key, location: location, length: 10_000_000)
            defer { connection.close() }
            #expect(answer?.status == 100)
            try await RawConnection.offPool { connection.send([UInt8](repeating: 1, count: 64 * 1024)) }
            let store = server.service.database
            guard
                case .success(let (_, spare)) = try await store.createKey(
                    accountId: accountId, label: "spare", now: Date())
            else {
                Issue.record("no second key")
                return
            }
            let keys = try await store.keys(accountId: accountId)
            let first = try #require(keys.first { $0.label != "spare" })
            guard case .success = try await store.revokeKey(id: first.id, accountId: accountId, now: Date()) else {
                Issue.record("the key was not revoked")
                return
            }
            let closed = try await RawConnection.offPool { connection.secondsUntilClosed(timeout: 12) }
            #expect(closed != nil && closed! < 8, "the append outlived its key: \(String(describing: closed))")
            let state = try await wire.send(.GET, location, key: spare).json()
            #expect(state["state"] as? String == "receiving")
        }
    }

    /// Event streams per account are capped (`http.maxEventStreamsPerAccount`, 429 beyond), a
    /// revoked key ends its open streams within a few seconds, and the slots come back.
    @Test func eventStreamsAreCappedAndEndWithTheirKey() async throws {
        let server = try await TestServer {
            $0.workers = 0; $0.maxEventStreamsPerAccount = 2
        }
        let video = try await Fixtures.data(.tiny)
        try await withServer(server, .live) { client in
            let wire = try Wire(client)
            let (accountId, key) = try await client.createAccount()
            let job = try #require(
                try await client.upload(key: key, file: video, fields: [("target_duration", "5")]).json()["job_id"]
                    as? String)
            let store = server.service.database
            guard
                case .success(let (_, spare)) = try await store.createKey(
                    accountId: accountId, label: "spare", now: Date())
            else {
                Issue.record("no second key")
                return
            }
            let start = Date()
            // Two streams, each holding its slot once its head has arrived (or failed: then the
            // third is not refused and the test says so).
            let (heads, head) = AsyncStream<Int>.makeStream()
            let streams = (0..<2).map { _ in
                Task {
                    do {
                        return try await wire.send(
                            .GET, "/api/v1/jobs/\(job)/events", key: key, timeout: .seconds(40),
                            headReceived: { head.yield($0) })
                    } catch {
                        head.yield(0)
                        throw error
                    }
                }
            }
            var opened: [Int] = []
            for await status in heads {
                opened.append(status)
                if opened.count == 2 { break }
            }
            #expect(opened == [200, 200])
            let third = try? await wire.send(.GET, "/api/v1/jobs/\(job)/events", key: spare, timeout: .seconds(5))
            #expect(
                third?.status == 429 && third?.text.contains("too_many_streams") == true,
                "\(third?.text ?? "no answer in 5 s")")
            #expect(Int(third?.header("Retry-After") ?? "") ?? 0 > 0)
            // Revoking the streams' key ends both.
            let keys = try await store.keys(accountId: accountId)
            let first = try #require(keys.first { $0.label != "spare" })
            let revokedAt = Date()
            guard case .success = try await store.revokeKey(id: first.id, accountId: accountId, now: Date()) else {
                Issue.record("the key was not revoked")
                return
            }
            // Should they outlive the key, the job's cancellation ends them after 10 s (the test
            // then fails on the time instead of waiting for the streams forever).
            let service = server.service
            let account = try #require(try await service.account(apiKey: spare))
            let fallback = Task {
                try await Task.sleep(for: .seconds(10))
                _ = try await service.cancelOrDelete(id: job, account: account)
            }
            for stream in streams {
                let reply = try await stream.value
                #expect(reply.status == 200)
            }
            fallback.cancel()
            #expect(
                Date().timeIntervalSince(revokedAt) < 8,
                "streams outlived their key (\(Date().timeIntervalSince(start)) s)")
            // Their slots are free: the spare key opens a stream (ended at once by the job's cancellation).
            _ = try await client.get("/api/v1/jobs/\(job)", key: spare, method: .delete)
            let again = try await wire.send(.GET, "/api/v1/jobs/\(job)/events", key: spare, timeout: .seconds(20))
            #expect(again.status == 200 && again.text.contains("cancelled"), "\(again.text)")
        }
    }
}

extension HostileUploadTests {
    /// The per-account upload slots and event streams are read from the environment, and
    /// Config/moments.json holds their defaults (a quarter of the server's slots; 8 streams).
    @Test func perAccountLimitsAreConfigurable() async throws {
        let reader = try await MomentsConfiguration.reader(
            environment: [
                "UPLOAD_MAX_CONCURRENT_PER_ACCOUNT": "3", "HTTP_MAX_EVENT_STREAMS_PER_ACCOUNT": "2"
            ], file: "/nonexistent/moments.json")
        let settings = ServiceSettings(reader: reader)
        #expect(settings.maxConcurrentUploadsPerAccount == 3 && settings.maxEventStreamsPerAccount == 2)
        let shipped = ServiceSettings(
            reader: try await MomentsConfiguration.reader(environment: [:], file: "Config/moments.json"))
        #expect(shipped.maxConcurrentUploadsPerAccount == 0 && shipped.maxEventStreamsPerAccount == 8)
        #expect(shipped.maxConcurrentUploadsPerAccount == ServiceSettings().maxConcurrentUploadsPerAccount)
    }
}

/// A plain upload's place names the process that holds it, so the next server on the host frees
/// the places of one that was killed instead of holding the account up for their lease.
@Suite("Upload places of dead processes")
struct UploadHolderTests {
    @Test func placesOfGoneProcessesOnThisHostAreDead() throws {
        let me = UploadHolder.current
        #expect(me.pid == getpid() && me.started != "0")
        #expect(!UploadHolder.isDead(me.name + "/a-place"), "this process's own place")
        // A process that does not exist, and this pid started at another time (a reused pid).
        #expect(UploadHolder.isDead(me.hostPrefix + "999999999/12345/x"))
        #expect(UploadHolder.isDead(me.hostPrefix + "\(getpid())/1/x"))
        // A live process of the host (pid 1) at its own start time is alive.
        let initStart = try #require(UploadHolder.startTime(of: 1))
        #expect(!UploadHolder.isDead(me.hostPrefix + "1/\(initStart)/x"))
        // Another host's or another boot's places are left to their lease.
        #expect(!UploadHolder.isDead("other-host/\(me.boot)/999999999/1/x"))
        #expect(!UploadHolder.isDead("\(me.host)/another-boot/999999999/1/x"))
    }
}
