import AsyncHTTPClient
import Crypto
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Logging
import MomentsConfig
import MomentsServer
import NIOCore
import NIOHTTP1
import PostgresStore
import Store
import Testing
import Uploads

/// Resumable uploads at /api/v1/uploads: tus 1.0 and the IETF draft iOS URLSession speaks, cut
/// off and resumed, checked byte for byte, through our own raw connections, curl and tuspy.
@Suite("Resumable uploads (tus 1.0, IETF draft)")
struct ResumableUploadTests {
    static func header(_ name: String) -> HTTPField.Name { HTTPField.Name(name)! }

    /// A server whose jobs wait in the queue (no worker), so the stored input can be compared.
    static func queueOnlyServer(_ configure: @escaping (inout ServiceSettings) -> Void = { _ in }) async throws
        -> TestServer
    {
        try await TestServer { settings in
            settings.workers = 0
            configure(&settings)
        }
    }

    /// The job's stored input, read back from the media storage (folder or bucket).
    static func storedInput(_ server: TestServer, job: String) async throws -> Data {
        let workspace = try await server.service.mediaStorage.prepareWorkspace(jobID: job)
        defer { Task { await server.service.mediaStorage.discardWorkspace(jobID: job) } }
        return try Data(contentsOf: URL(fileURLWithPath: workspace.inputPath))
    }

    static func body(_ data: Data) -> ByteBuffer { ByteBuffer(bytes: data) }

    static let tusHeaders = [("Tus-Resumable", "1.0.0")]

    func create(_ wire: Wire, key: String, length: Int, metadata: String = "target_duration MTA=,quality bG93")
        async throws -> String
    {
        let created = try await wire.send(
            .POST, "/api/v1/uploads", key: key,
            headers: Self.tusHeaders + [("Upload-Length", String(length)), ("Upload-Metadata", metadata)])
        #expect(created.status == 201, "\(created.text)")
        #expect(created.header("Tus-Resumable") == "1.0.0")
        #expect(created.header("Upload-Expires") != nil)
        let location = try #require(created.header("Location"))
        #expect(location.hasPrefix("/api/v1/uploads/"))
        return location
    }

    func patch(
        _ wire: Wire, _ location: String, key: String, offset: Int, _ bytes: Data, extra: [(String, String)] = []
    ) async throws -> Wire.Reply {
        try await wire.send(
            .PATCH, location, key: key,
            headers: Self.tusHeaders + [
                ("Content-Type", "application/offset+octet-stream"), ("Upload-Offset", String(offset))
            ] + extra, body: bytes)
    }

    func offset(_ wire: Wire, _ location: String, key: String) async throws -> Int? {
        try await wire.send(.HEAD, location, key: key, headers: Self.tusHeaders).header("Upload-Offset").flatMap {
            Int($0)
        }
    }

    /// OPTIONS tells a tus client the version, the extensions, the largest upload and the checksums.
    @Test func tusDiscovery() async throws {
        let server = try await TestServer()
        try await withServer(server, .router) { client in
            let response = try await client.executeRequest(
                uri: "/api/v1/uploads", method: .options, headers: [:], body: nil)
            #expect(response.status == .noContent)
            #expect(response.headers[Self.header("Tus-Version")] == "1.0.0")
            let extensions = Set(
                (response.headers[Self.header("Tus-Extension")] ?? "").split(separator: ",").map(String.init))
            #expect(
                extensions.isSuperset(of: [
                    "creation", "creation-with-upload", "creation-defer-length", "termination", "expiration", "checksum"
                ]))
            #expect(response.headers[Self.header("Tus-Checksum-Algorithm")]?.contains("sha1") == true)
            #expect(response.headers[Self.header("Tus-Max-Size")] == String(server.service.settings.maxUploadBytes))
        }
    }

    /// tus in three PATCHes: HEAD tells the offset, GET shows progress, the last PATCH answers with
    /// the job (as POST /upload does), and the stored input equals the file byte for byte.
    @Test func tusUploadInPiecesBecomesAJob() async throws {
        let server = try await Self.queueOnlyServer()
        let video = try await Fixtures.data(.short)
        try await withServer(server, .live) { client in
            let wire = try Wire(client)
            let (_, key) = try await client.createAccount()
            // The shape, pinned moments and file name ride in Upload-Metadata; a bad one is refused at creation.
            let refused = try await wire.send(
                .POST, "/api/v1/uploads", key: key,
                headers: Self.tusHeaders + [("Upload-Length", String(video.count)), ("Upload-Metadata", "aspect Mzoy")])
            #expect(refused.status == 422 && refused.text.contains("invalid_aspect"), "\(refused.text)")
            let location = try await create(
                wire, key: key, length: video.count,
                metadata: "target_duration MTA=,quality bG93,aspect OToxNg==,include Mg==,filename SU1HXzAwNDIuTU9W")
            #expect(try await offset(wire, location, key: key) == 0)
            let third = video.count / 3
            let first = try await patch(wire, location, key: key, offset: 0, video.prefix(third))
            #expect(first.status == 204)
            #expect(first.header("Upload-Offset") == String(third))
            let second = try await patch(wire, location, key: key, offset: third, video[third..<(2 * third)])
            #expect(second.status == 204)
            let state = try await wire.send(.GET, location, key: key).json()
            #expect(
                state["offset"] as? Int == 2 * third && state["length"] as? Int == video.count
                    && state["complete"] as? Bool == false)
            #expect(state["state"] as? String == "receiving")
            let last = try await patch(wire, location, key: key, offset: 2 * third, video.suffix(from: 2 * third))
            #expect(last.status == 204, "\(last.text)")
            #expect(last.header("Upload-Offset") == String(video.count))
            let job = try #require(last.header("Moments-Job-Id"))
            let done = try await wire.send(.GET, location, key: key).json()
            #expect(
                done["complete"] as? Bool == true && done["job_id"] as? String == job
                    && done["state"] as? String == "completed")
            let detail = try await client.get("/api/v1/jobs/\(job)", key: key).json()
            let parameters = detail["parameters"] as? [String: Any]
            #expect(
                parameters?["target_duration"] as? Int == 10 && parameters?["quality"] as? String == "low", "\(detail)")
            #expect(
                parameters?["aspect"] as? String == "9:16" && parameters?["include"] as? [Double] == [2], "\(detail)")
            let stored = try await server.service.database.job(id: job)
            #expect(stored?.edit?.sourceName == "IMG_0042.MOV")
            #expect(try await Self.storedInput(server, job: job) == video)
            // The upload is finished: a further append is refused, naming the job.
            let again = try await patch(wire, location, key: key, offset: video.count, Data([1]))
            #expect(again.status == 409)
            #expect(server.storedFiles().filter { $0.contains("/uploads/") }.isEmpty)
            #expect(
                (try? FileManager.default.contentsOfDirectory(atPath: server.layout.resumableDirectory))?.isEmpty
                    == true)
        }
    }

    /// A PATCH cut off at 60 % keeps every byte that arrived: HEAD tells the truth, and the rest
    /// completes the upload into exactly the original file.
    @Test func tusAppendCutOffResumes() async throws {
        let server = try await Self.queueOnlyServer()
        let video = try await Fixtures.data(.short)
        try await withServer(server, .live) { client in
            let wire = try Wire(client)
            let (_, key) = try await client.createAccount()
            let port = try #require(client.port)
            let location = try await create(wire, key: key, length: video.count)
            let cut = video.count * 6 / 10
            try await RawConnection.offPool {
                let connection = try RawConnection(port: port)
                connection.send(
                    "PATCH \(location) HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer \(key)\r\nTus-Resumable: 1.0.0\r\n"
                        + "Content-Type: application/offset+octet-stream\r\nUpload-Offset: 0\r\nContent-Length: \(video.count)\r\n\r\n"
                )
                connection.send([UInt8](video.prefix(cut)))
                Thread.sleep(forTimeInterval: 0.3)
                connection.close()
            }
            var seen: Int?
            for _ in 0..<50 {
                seen = try await offset(wire, location, key: key)
                if seen == cut { break }
                try await Task.sleep(for: .milliseconds(100))
            }
            #expect(seen == cut, "every byte that arrived is kept")
            let rest = try await patch(wire, location, key: key, offset: cut, video.suffix(from: cut))
            #expect(rest.status == 204, "\(rest.text)")
            let job = try #require(rest.header("Moments-Job-Id"))
            #expect(try await Self.storedInput(server, job: job) == video)
        }
    }

    /// The offset is checked (409 with the real offset), a wrong checksum discards the append's
    /// bytes (460), an unknown algorithm is refused (400), a good checksum is accepted.
    @Test func offsetAndChecksumAreChecked() async throws {
        let server = try await Self.queueOnlyServer()
        let video = try await Fixtures.data(.tiny)
        try await withServer(server, .live) { client in
            let wire = try Wire(client)
            let (_, key) = try await client.createAccount()
            let location = try await create(wire, key: key, length: video.count)
            let half = video.count / 2
            let wrongOffset = try await patch(wire, location, key: key, offset: 5, video.prefix(half))
            #expect(wrongOffset.status == 409)
            #expect(wrongOffset.header("Upload-Offset") == "0")
            let bad = try await patch(
                wire, location, key: key, offset: 0, video.prefix(half),
                extra: [("Upload-Checksum", "sha1 \(Data(repeating: 7, count: 20).base64EncodedString())")])
            #expect(bad.status == 460, "\(bad.text)")
            #expect(try await offset(wire, location, key: key) == 0)
            let unknown = try await patch(
                wire, location, key: key, offset: 0, video.prefix(half), extra: [("Upload-Checksum", "crc32 AAAA")])
            #expect(unknown.status == 400)
            let digest = Data(Insecure.SHA1.hash(data: video.prefix(half)))
            let good = try await patch(
                wire, location, key: key, offset: 0, video.prefix(half),
                extra: [("Upload-Checksum", "sha1 \(digest.base64EncodedString())")])
            #expect(good.status == 204)
            #expect(good.header("Upload-Offset") == String(half))
            let past = try await patch(wire, location, key: key, offset: half, video.suffix(from: half) + Data([0, 0]))
            #expect(past.status == 413, "bytes past the declared length are refused")
            #expect(try await offset(wire, location, key: key) == half)
        }
    }

    /// Deferred length (declared with a later PATCH), creation-with-upload, termination (the
    /// bytes are deleted and the upload is gone), and another account sees nothing.
    @Test func deferredLengthCreationWithUploadTerminationAndIsolation() async throws {
        let server = try await Self.queueOnlyServer()
        let video = try await Fixtures.data(.tiny)
        try await withServer(server, .live) { client in
            let wire = try Wire(client)
            let (_, key) = try await client.createAccount()
            let (_, other) = try await client.createAccount()
            let half = video.count / 2
            let created = try await wire.send(
                .POST, "/api/v1/uploads", key: key,
                headers: Self.tusHeaders + [
                    ("Upload-Defer-Length", "1"), ("Content-Type", "application/offset+octet-stream")
                ], body: video.prefix(half))
            #expect(created.status == 201, "\(created.text)")
            #expect(created.header("Upload-Offset") == String(half))
            let location = try #require(created.header("Location"))
            let state = try await wire.send(.HEAD, location, key: key, headers: Self.tusHeaders)
            #expect(state.header("Upload-Defer-Length") == "1")
            #expect(state.header("Cache-Control") == "no-store")

            for method in [HTTPMethod.HEAD, .GET, .DELETE] {
                let response = try await wire.send(method, location, key: other, headers: Self.tusHeaders)
                #expect(response.status == 404, "\(method) by another account")
            }
            let foreignPatch = try await patch(wire, location, key: other, offset: half, video.suffix(from: half))
            #expect(foreignPatch.status == 404)

            let finished = try await patch(
                wire, location, key: key, offset: half, video.suffix(from: half),
                extra: [("Upload-Length", String(video.count))])
            #expect(finished.status == 204, "\(finished.text)")

            let second = try await create(wire, key: key, length: video.count)
            _ = try await patch(wire, second, key: key, offset: 0, video.prefix(half))
            let deleted = try await wire.send(.DELETE, second, key: key, headers: Self.tusHeaders)
            #expect(deleted.status == 204)
            let gone = try await wire.send(.HEAD, second, key: key, headers: Self.tusHeaders)
            #expect(gone.status == 410)
            #expect(
                (try? FileManager.default.contentsOfDirectory(atPath: server.layout.resumableDirectory))?.isEmpty
                    == true)
        }
    }

    /// One append at a time: a second PATCH while a stale one of this server still holds the
    /// upload stops it (its bytes are kept) and is told the real offset (409); while an append on
    /// another API host holds it, a PATCH is refused with 423 and HEAD still answers.
    @Test func concurrentAppendsAreSerialised() async throws {
        let server = try await Self.queueOnlyServer()
        let video = try await Fixtures.data(.short)
        try await withServer(server, .live) { client in
            let wire = try Wire(client)
            let (account, key) = try await client.createAccount()
            let location = try await create(wire, key: key, length: video.count)
            let half = video.count / 2
            let port = wire.port
            let stale = try await RawConnection.offPool { () -> RawConnection in
                let connection = try RawConnection(port: port)
                connection.send(
                    "PATCH \(location) HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer \(key)\r\nTus-Resumable: 1.0.0\r\n"
                        + "Content-Type: application/offset+octet-stream\r\nUpload-Offset: 0\r\nContent-Length: \(video.count)\r\n\r\n"
                )
                connection.send([UInt8](video.prefix(half)))
                Thread.sleep(forTimeInterval: 0.5)
                return connection
            }
            let second = try await patch(wire, location, key: key, offset: 0, video)
            #expect(second.status == 409, "\(second.text)")
            // What reached the server before the stale request was closed is kept (the rest of
            // what the client sent may still have been in the socket's buffers).
            let kept = try #require(second.header("Upload-Offset").flatMap { Int($0) })
            #expect(kept > 0 && kept <= half, "the stale append's bytes are kept: \(kept) of \(half)")
            let closed = try await RawConnection.offPool { stale.secondsUntilClosed(timeout: 5) }
            #expect(closed != nil, "the stale request's connection is closed")

            let id = String(location.split(separator: "/").last!)
            let now = Date()
            let held = try await server.service.database.holdUpload(
                id: id, accountId: account, holder: "another-host",
                until: now.addingTimeInterval(30), now: now)
            guard case .held = held else { Issue.record("could not hold the upload: \(held)"); return }
            let locked = try await patch(wire, location, key: key, offset: kept, video.suffix(from: kept))
            #expect(locked.status == 423, "\(locked.text)")
            #expect(locked.header("Retry-After") != nil)
            #expect(try await offset(wire, location, key: key) == kept)
            try await server.service.database.releaseUpload(id: id, holder: "another-host", now: Date())
            let rest = try await patch(wire, location, key: key, offset: kept, video.suffix(from: kept))
            #expect(rest.status == 204, "\(rest.text)")
        }
    }

    /// Hostile numbers and empty files: an offset or length near Int64.max is a 400 (no
    /// arithmetic overflows), an empty upload is refused at creation instead of holding a slot.
    @Test func hostileSizesAndEmptyUploadsAreRefused() async throws {
        let server = try await Self.queueOnlyServer()
        try await withServer(server, .live) { client in
            let wire = try Wire(client)
            let (_, key) = try await client.createAccount()
            let huge = try await wire.send(
                .PATCH, "/api/v1/uploads/0123abcd", key: key,
                headers: [
                    ("Upload-Draft-Interop-Version", "6"), ("Upload-Complete", "?1"),
                    ("Upload-Offset", "9223372036854775807")
                ], body: Data([1]))
            #expect(huge.status == 400, "\(huge.text)")
            let hugeLength = try await wire.send(
                .POST, "/api/v1/uploads", key: key,
                headers: Self.tusHeaders + [("Upload-Length", "9223372036854775807")])
            #expect(hugeLength.status == 400)
            let empty = try await wire.send(
                .POST, "/api/v1/uploads", key: key, headers: Self.tusHeaders + [("Upload-Length", "0")])
            #expect(empty.status == 400, "\(empty.text)")
            let emptyIETF = try await wire.send(
                .POST, "/api/v1/uploads", key: key,
                headers: [("Upload-Draft-Interop-Version", "6"), ("Upload-Complete", "?1")])
            #expect(emptyIETF.status == 400)
            let state = try await wire.send(.GET, "/health", key: nil)
            #expect(state.status == 200, "the server is still up")
        }
    }

    /// Creating an upload counts against the plan's jobs at once (a second one, or a plain upload,
    /// is refused with 429 while it receives), the declared length against the plan's size (413);
    /// a file that is not a video fails at the end with nothing charged and nothing left.
    @Test func planLimitsApplyAtCreationAndAtTheEnd() async throws {
        var plans = TestServer.roomyPlans
        plans.free.concurrentJobs = 1
        plans.free.maxUploadBytes = 50_000_000
        plans.free.monthlyHighlights = 3
        let server = try await TestServer(plans: plans) { $0.workers = 0 }
        try await withServer(server, .live) { client in
            let wire = try Wire(client)
            let (_, key) = try await client.createAccount()
            let tooLarge = try await wire.send(
                .POST, "/api/v1/uploads", key: key, headers: Self.tusHeaders + [("Upload-Length", "60000000")])
            #expect(tooLarge.status == 413)
            let garbage = Data((0..<40_000).map { UInt8(truncatingIfNeeded: $0 &* 31) })
            let location = try await create(wire, key: key, length: garbage.count)
            let second = try await wire.send(
                .POST, "/api/v1/uploads", key: key, headers: Self.tusHeaders + [("Upload-Length", "1000")])
            #expect(second.status == 429, "\(second.text)")
            let plain = try await client.upload(key: key, file: try await Fixtures.data(.tiny))
            #expect(plain.status == .tooManyRequests)
            let end = try await patch(wire, location, key: key, offset: 0, garbage)
            #expect(end.status >= 400 && end.status < 500, "\(end.text)")
            let state = try await wire.send(.GET, location, key: key).json()
            #expect(state["state"] as? String == "failed")
            #expect((state["error"] as? [String: Any])?["code"] as? String != nil)
            let account = try await wire.send(.GET, "/api/v1/account", key: key).json()
            #expect((account["usage"] as? [String: Any])?["used"] as? Int == 0, "\(account)")
            #expect(
                (try? FileManager.default.contentsOfDirectory(atPath: server.layout.resumableDirectory))?.isEmpty
                    == true)
            // The failed upload no longer counts: a new one may start.
            let third = try await wire.send(
                .POST, "/api/v1/uploads", key: key, headers: Self.tusHeaders + [("Upload-Length", "1000")])
            #expect(third.status == 201)
        }
    }

    /// An append is answered before its bytes are recorded. If the process dies in between, the
    /// staged file holds bytes the record does not: they are not trusted. The client's next append,
    /// at the offset it was answered, gets a 409 with the recorded offset; HEAD says the same; the
    /// upload resumes from there and the stored input is the file byte for byte (the unrecorded
    /// bytes, garbage here, are cut off).
    @Test func unrecordedBytesAreNotTrusted() async throws {
        let server = try await Self.queueOnlyServer()
        let video = try await Fixtures.data(.short)
        try await withServer(server, .live) { client in
            let wire = try Wire(client)
            let (_, key) = try await client.createAccount()
            let location = try await create(wire, key: key, length: video.count)
            let third = video.count / 3
            #expect(try await patch(wire, location, key: key, offset: 0, video.prefix(third)).status == 204)
            #expect(try await offset(wire, location, key: key) == third)
            // What a process that died between an answer and its record leaves: bytes past the record.
            let staged = server.layout.resumableDirectory + "/" + (location as NSString).lastPathComponent
            let file = try #require(FileHandle(forWritingAtPath: staged))
            try file.seekToEnd()
            try file.write(contentsOf: Data(repeating: 0xFF, count: third))
            try file.close()
            let conflict = try await patch(wire, location, key: key, offset: 2 * third, video[(2 * third)...])
            #expect(conflict.status == 409, "\(conflict.text)")
            #expect(try conflict.json()["offset"] as? Int == third, "\(conflict.text)")
            #expect(try await offset(wire, location, key: key) == third)
            let rest = try await patch(wire, location, key: key, offset: third, video.suffix(from: third))
            #expect(rest.status == 204, "\(rest.text)")
            let job = try #require(rest.header("Moments-Job-Id"))
            #expect(try await Self.storedInput(server, job: job) == video)
        }
    }

    /// A free account's upload that stalls (a phone lost its connection) stops holding the plan's
    /// one place after `plans.free.uploadIdleMinutes`: a new upload is accepted at once, not a day
    /// later. The stalled one may still resume, if a place is free then: beside the new one it is
    /// refused (429, its bytes kept); once the new one is cancelled it resumes to a job.
    @Test func anIdleUploadStopsHoldingThePlace() async throws {
        let clock = TestClock(Date())
        var plans = TestServer.roomyPlans
        plans.free.concurrentJobs = 1
        plans.free.uploadIdleMinutes = 15
        let server = try await TestServer(plans: plans, clock: clock) { $0.workers = 0 }
        let video = try await Fixtures.data(.tiny)
        try await withServer(server, .live) { client in
            let wire = try Wire(client)
            let (_, key) = try await client.createAccount()
            let stalled = try await create(wire, key: key, length: video.count)
            #expect(try await patch(wire, stalled, key: key, offset: 0, video.prefix(100)).status == 204)
            #expect(try await offset(wire, stalled, key: key) == 100)
            let beside = try await wire.send(
                .POST, "/api/v1/uploads", key: key, headers: Self.tusHeaders + [("Upload-Length", "1000")])
            #expect(beside.status == 429, "a fresh upload holds the place: \(beside.text)")
            clock.now = clock.now.addingTimeInterval(16 * 60)
            let fresh = try await create(wire, key: key, length: video.count)
            let resumed = try await patch(wire, stalled, key: key, offset: 100, video.suffix(from: 100))
            #expect(resumed.status == 429, "\(resumed.text)")
            #expect((try resumed.json()["type"] as? String)?.hasSuffix("/too_many_jobs") == true, "\(resumed.text)")
            #expect(try await offset(wire, stalled, key: key) == 100, "the stalled upload keeps its bytes")
            // Another account cannot resume it, idle or not: it does not exist for them.
            let (_, stranger) = try await client.createAccount()
            #expect(try await patch(wire, stalled, key: stranger, offset: 100, video.suffix(from: 100)).status == 404)
            #expect(try await wire.send(.DELETE, fresh, key: key, headers: Self.tusHeaders).status == 204)
            let done = try await patch(wire, stalled, key: key, offset: 100, video.suffix(from: 100))
            #expect(done.status == 204, "\(done.text)")
            #expect(done.header("Moments-Job-Id") != nil)
        }
    }

    /// The idle time is a setting of each plan (0: an upload holds its place until it expires).
    @Test func uploadIdleMinutesIsASettingOfEachPlan() async throws {
        let shipped = PlanSettings(
            reader: try await MomentsConfiguration.reader(environment: [:], file: "Config/moments.json"))
        #expect(shipped.free.uploadIdleSeconds == 900 && shipped.pro.uploadIdleSeconds == 3600)
        let set = PlanSettings(
            reader: try await MomentsConfiguration.reader(
                environment: ["PLANS_FREE_UPLOAD_IDLE_MINUTES": "0"], file: "Config/moments.json"))
        #expect(set.free.uploadIdleSeconds == nil && set.pro.uploadIdleSeconds == 3600)
    }

    /// An upload that receives nothing for `upload.resumableExpiryHours` expires: the sweeper
    /// deletes its bytes and it answers 410.
    @Test func abandonedUploadsExpire() async throws {
        let clock = TestClock(Date())
        let server = try await TestServer(clock: clock) {
            $0.workers = 0; $0.resumableExpiryHours = 2
        }
        let video = try await Fixtures.data(.tiny)
        try await withServer(server, .live) { client in
            let wire = try Wire(client)
            let (_, key) = try await client.createAccount()
            let location = try await create(wire, key: key, length: video.count)
            _ = try await patch(wire, location, key: key, offset: 0, video.prefix(100))
            // The append has answered; the offset request waits until it has recorded its bytes.
            #expect(
                try await wire.send(.HEAD, location, key: key, headers: Self.tusHeaders).header("Upload-Offset")
                    == "100")
            let uploads = ResumableUploads(intake: server.service.intake, logger: .init(label: "test"))
            clock.now = clock.now.addingTimeInterval(3600)
            #expect(await uploads.sweep() == 0, "an hour of silence is within the expiry")
            clock.now = clock.now.addingTimeInterval(3700)
            #expect(await uploads.sweep() == 1)
            let gone = try await wire.send(.HEAD, location, key: key)
            #expect(gone.status == 410)
            #expect(
                (try? FileManager.default.contentsOfDirectory(atPath: server.layout.resumableDirectory))?.isEmpty
                    == true)
        }
    }
}
