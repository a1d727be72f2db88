import Foundation
import HTTPTypes
import HummingbirdTesting
import MomentsConfig
import NIOCore
import Testing

/// The HTTP transport: what one client can hold of the server (uploads in flight,
/// connections, disk), how long it can hold it (header, idle and body-rate limits), what it learns
/// before it may send a body (100 Continue), and what errors and /ready tell it.
@Suite("Transport limits", .onceAcrossEngines)
struct TransportLimitTests {
    static func port(_ client: any TestClientProtocol) throws -> Int { try #require(client.port) }

    /// An upload head with `Expect: 100-continue` on a connection of its own: the first response
    /// the server sends back (100 when it invites the body).
    static func startUpload(port: Int, key: String, contentLength: Int = 500_000) async throws -> (
        RawConnection, RawConnection.Response?
    ) {
        try await RawConnection.offPool {
            let connection = try RawConnection(port: port)
            connection.send(RawConnection.uploadHead(key: key, contentLength: contentLength, expectContinue: true))
            return (connection, connection.readResponse(timeout: 10))
        }
    }

    /// Retries until the server invites an upload again (its in-flight records were released).
    static func eventuallyInvited(port: Int, key: String, contentLength: Int = 500_000) async throws -> Bool {
        for _ in 0..<50 {
            let (connection, response) = try await startUpload(port: port, key: key, contentLength: contentLength)
            connection.close()
            if response?.status == 100 { return true }
            try await Task.sleep(for: .milliseconds(100))
        }
        return false
    }

    // MARK: 100 Continue only after the checks

    @Test func noContinueForARefusedRequest() async throws {
        var plans = TestServer.roomyPlans
        plans.free.monthlyHighlights = 0
        let server = try await TestServer(plans: plans)
        try await withServer(server, .live) { client in
            let port = try Self.port(client)
            let (_, key) = try await client.createAccount()
            for (badKey, status) in [("not-a-key", 401), (key, 402)] {
                let (connection, response) = try await Self.startUpload(port: port, key: badKey)
                let answer = try #require(response)
                #expect(answer.status == status, "\(answer.head)")
                #expect(!answer.head.contains("100 Continue"))
                #expect(answer.header("Content-Type") == "application/problem+json")
                // The refused body is not read: the connection is closed after the answer.
                #expect(try await RawConnection.offPool { connection.secondsUntilClosed(timeout: 5) } != nil)
            }
        }
    }

    // MARK: Uploads in flight

    /// A free account with one job at a time cannot stream a second upload while the first is
    /// still being received; refused before its body is read (no 100), with Retry-After.
    @Test func uploadsInFlightCountAsJobs() async throws {
        var plans = TestServer.roomyPlans
        plans.free.concurrentJobs = 1
        let server = try await TestServer(plans: plans)
        try await withServer(server, .live) { client in
            let port = try Self.port(client)
            let (_, key) = try await client.createAccount()
            let (first, invited) = try await Self.startUpload(port: port, key: key)
            #expect(invited?.status == 100)
            for _ in 0..<3 {
                let (extra, response) = try await Self.startUpload(port: port, key: key)
                let answer = try #require(response)
                #expect(answer.status == 429, "\(answer.head)\(answer.body)")
                #expect(Int(answer.header("Retry-After") ?? "") ?? 0 > 0)
                #expect(
                    answer.body.contains("too_many_jobs") && answer.body.contains("\"uploading\":1"), "\(answer.body)")
                extra.close()
            }
            // The first upload's client goes away: its slot is released.
            first.close()
            #expect(try await Self.eventuallyInvited(port: port, key: key))
        }
        // The refused and abandoned bodies leave nothing behind once their handlers end.
        #expect(await eventually { server.storedFiles().isEmpty }, "\(server.storedFiles())")
    }

    /// `upload.maxConcurrent`: bodies received at once by the whole server.
    @Test func serverWideUploadCap() async throws {
        let server = try await TestServer { $0.maxConcurrentUploads = 1 }
        try await withServer(server, .live) { client in
            let port = try Self.port(client)
            let (_, alice) = try await client.createAccount()
            let (_, bob) = try await client.createAccount()
            let (first, invited) = try await Self.startUpload(port: port, key: alice)
            #expect(invited?.status == 100)
            let (second, response) = try await Self.startUpload(port: port, key: bob)
            let answer = try #require(response)
            #expect(answer.status == 503 && answer.body.contains("server_busy"), "\(answer.head)\(answer.body)")
            #expect(Int(answer.header("Retry-After") ?? "") ?? 0 > 0)
            second.close()
            first.close()
            #expect(try await Self.eventuallyInvited(port: port, key: bob))
        }
    }

    /// Declared Content-Lengths reserve disk: two uploads that each fit the free space above the
    /// floor, but not together, cannot both be invited.
    @Test(
        .enabled(
            if: TestEngine.isEmbedded,
            "engine-independent; the production run creates databases in parallel, which moves the free space it measures"
        )) func declaredBytesReserveDisk() async throws
    {
        let free = try #require(
            try FileManager.default.attributesOfFileSystem(forPath: NSTemporaryDirectory())[.systemFreeSize]
                as? NSNumber
        ).int64Value
        try #require(free > 3 << 30, "the test needs 3 GB free")
        // 1 GB above the floor; each upload declares 600 MB (other builders' disk use may move the
        // free space by a few hundred MB either way without changing the outcome).
        let server = try await TestServer { $0.minFreeBytes = free - (1 << 30) }
        let declared = 600 << 20
        try await withServer(server, .live) { client in
            let port = try Self.port(client)
            let (_, alice) = try await client.createAccount()
            let (_, bob) = try await client.createAccount()
            let (first, invited) = try await Self.startUpload(port: port, key: alice, contentLength: declared)
            #expect(invited?.status == 100, "\(invited?.head ?? "")\(invited?.body ?? "")")
            let (second, response) = try await Self.startUpload(port: port, key: bob, contentLength: declared)
            let answer = try #require(response)
            #expect(
                answer.status == 507 && answer.body.contains("insufficient_storage"), "\(answer.head)\(answer.body)")
            second.close()
            first.close()
            // The reservation is released with the upload.
            #expect(try await Self.eventuallyInvited(port: port, key: bob, contentLength: declared))
        }
    }

    // MARK: Connections and timeouts

    /// `http.maxConnections`: a connection over the cap is closed at once; once one closes, a new
    /// one is served.
    @Test func connectionCap() async throws {
        let server = try await TestServer { $0.maxConnections = 2 }
        try await withServer(server, .live) { client in
            let port = try Self.port(client)
            try await RawConnection.offPool {
                // The test client may hold a pooled connection of its own: fill up to the cap.
                var open: [RawConnection] = []
                while open.count < 3 {
                    let connection = try RawConnection(port: port)
                    connection.send("GET /health HTTP/1.1\r\nHost: localhost\r\n\r\n")
                    guard connection.readResponse(timeout: 5)?.status == 200 else {
                        #expect(
                            connection.secondsUntilClosed(timeout: 2) != nil, "a connection over the cap stays open")
                        break
                    }
                    open.append(connection)
                }
                #expect(open.count <= 2, "\(open.count) connections served with a cap of 2")
                open.first?.close()
                var servedAgain = false
                for _ in 0..<30 where !servedAgain {
                    let connection = try RawConnection(port: port)
                    connection.send("GET /health HTTP/1.1\r\nHost: localhost\r\n\r\n")
                    servedAgain = connection.readResponse(timeout: 2)?.status == 200
                    if !servedAgain { Thread.sleep(forTimeInterval: 0.1) }
                }
                #expect(servedAgain)
            }
        }
    }

    /// `http.headerTimeoutSeconds`: a head that never completes is cut off; a complete request on
    /// an idle keep-alive connection is not (that is the idle timeout's business).
    @Test func headerTimeout() async throws {
        let server = try await TestServer {
            $0.headerTimeoutSeconds = 1
            $0.idleTimeoutSeconds = 30
        }
        try await withServer(server, .live) { client in
            let port = try Self.port(client)
            try await RawConnection.offPool {
                let slow = try RawConnection(port: port)
                slow.send("GET /health HTTP/1.1\r\nHost: localhost\r\n")
                Thread.sleep(forTimeInterval: 0.3)
                slow.send("X-Slow: 1\r\n")
                let closedAfter = slow.secondsUntilClosed(timeout: 6)
                #expect(closedAfter != nil && closedAfter! < 3, "\(String(describing: closedAfter))")

                let idle = try RawConnection(port: port)
                idle.send("GET /health HTTP/1.1\r\nHost: localhost\r\n\r\n")
                #expect(idle.readResponse()?.status == 200)
                Thread.sleep(forTimeInterval: 2.5)
                idle.send("GET /health HTTP/1.1\r\nHost: localhost\r\n\r\n")
                #expect(
                    idle.readResponse()?.status == 200, "an idle keep-alive connection was closed by the header timeout"
                )
            }
        }
    }

    /// `http.idleTimeoutSeconds`: an idle keep-alive connection is closed.
    @Test func idleTimeout() async throws {
        let server = try await TestServer { $0.idleTimeoutSeconds = 1 }
        try await withServer(server, .live) { client in
            let port = try Self.port(client)
            try await RawConnection.offPool {
                let idle = try RawConnection(port: port)
                idle.send("GET /health HTTP/1.1\r\nHost: localhost\r\n\r\n")
                #expect(idle.readResponse()?.status == 200)
                let closedAfter = idle.secondsUntilClosed(timeout: 6)
                #expect(closedAfter != nil && closedAfter! < 4, "\(String(describing: closedAfter))")
            }
        }
    }

    /// `upload.minBytesPerSecond` and `upload.stallSeconds`: a body that stalls is cut off and its
    /// partial file deleted; one that keeps the rate is received.
    @Test func stalledBodyIsCutOff() async throws {
        let server = try await TestServer {
            $0.minUploadBytesPerSecond = 20_000
            $0.uploadStallSeconds = 1
        }
        let video = try await Fixtures.data(.tiny)
        try await withServer(server, .live) { client in
            let port = try Self.port(client)
            let (_, key) = try await client.createAccount()
            let body = Array(Multipart.body(fields: [("target_duration", "5")], file: video).readableBytesView)
            // (The partial file is written through a handle that becomes a visible file only when
            // the upload completes; either way nothing may be left once the body is cut off.)
            let closedAfter = try await RawConnection.offPool { () -> Double? in
                let connection = try RawConnection(port: port)
                connection.send(RawConnection.uploadHead(key: key, contentLength: body.count, expectContinue: false))
                connection.send(Array(body.prefix(4000)))
                return connection.secondsUntilClosed(timeout: 8)
            }
            #expect(closedAfter != nil && closedAfter! < 5, "\(String(describing: closedAfter))")
            var left = server.storedFiles()
            for _ in 0..<30 where !left.isEmpty {
                try await Task.sleep(for: .milliseconds(100))
                left = server.storedFiles()
            }
            #expect(left.isEmpty, "\(left)")

            // At a steady rate well above the minimum, the same upload goes through.
            let accepted = try await RawConnection.offPool { () -> RawConnection.Response? in
                let connection = try RawConnection(port: port)
                connection.send(RawConnection.uploadHead(key: key, contentLength: body.count, expectContinue: false))
                var offset = 0
                while offset < body.count {
                    let end = min(body.count, offset + 40_000)
                    connection.send(Array(body[offset..<end]))
                    offset = end
                    Thread.sleep(forTimeInterval: 0.5)
                }
                return connection.readResponse(timeout: 20)
            }
            #expect(accepted?.status == 200, "\(accepted?.head ?? "")\(accepted?.body ?? "")")
        }
    }

    // MARK: Errors and /ready

    /// Every response carries X-Request-Id: the client's when it is short and plain, else a new
    /// one; a problem carries it as request_id.
    @Test func requestIDs() async throws {
        let server = try await TestServer()
        try await withServer(server, .router) { client in
            let own = try await client.get(
                "/health", key: nil, headers: [HTTPField.Name("X-Request-Id")!: "trace-42_A"])
            #expect(own.headers[HTTPField.Name("X-Request-Id")!] == "trace-42_A")
            for hostile in ["a b", "<script>", String(repeating: "x", count: 65), "../etc"] {
                let response = try await client.get(
                    "/health", key: nil, headers: [HTTPField.Name("X-Request-Id")!: hostile])
                let id = try #require(response.headers[HTTPField.Name("X-Request-Id")!])
                #expect(id != hostile && id.count >= 16 && id.allSatisfy { $0.isLetter || $0.isNumber || $0 == "-" })
            }
            let problem = try await client.get("/api/v1/jobs", key: "wrong")
            let json = try problem.expectProblem(.unauthorized)
            let id = try #require(problem.headers[HTTPField.Name("X-Request-Id")!])
            #expect(json["request_id"] as? String == id)
        }
    }

    /// Problems name no server path and repeat no FFmpeg text, whatever caused them.
    @Test func problemsRevealNoInternals() async throws {
        let server = try await TestServer()
        var random = SystemRandomNumberGenerator()
        let noise = Data((0..<50_000).map { _ in UInt8.random(in: 0...255, using: &random) })
        let video = try await Fixtures.data(.short)
        try await withServer(server, .router) { client in
            let (_, key) = try await client.createAccount()
            var bodies: [String] = []
            bodies.append(try await client.upload(key: key, file: noise).text)
            bodies.append(try await client.upload(key: key, file: video.prefix(video.count / 2)).text)
            bodies.append(try await client.upload(key: key, file: Data("not a video".utf8)).text)
            // An MP4 signature over a broken box structure: FFmpeg itself refuses it.
            var broken = Data([0, 0, 0, 0x18]) + Data("ftypisom".utf8) + Data([0, 0, 2, 0]) + Data("isommp41".utf8)
            broken += Data([0, 0, 0, 0x30]) + Data("moov".utf8) + noise.prefix(5000)
            bodies.append(try await client.upload(key: key, file: broken).text)
            // No Apple root installed: the reason names a file on the server.
            bodies.append(
                try await client.executeRequest(
                    uri: "/api/v1/webhooks/app-store", method: .post, headers: [:],
                    body: ByteBuffer(string: #"{"signedPayload":"x.y.z"}"#)
                ).text)
            bodies.append(try await client.get("/api/v1/nothing/etc/passwd", key: nil).text)
            for body in bodies {
                #expect(
                    !body.contains(server.scratch.path) && !body.contains("/tmp") && !body.contains("file:/"), "\(body)"
                )
                #expect(
                    !body.lowercased().contains("invalid data found") && !body.lowercased().contains("ffmpeg"),
                    "\(body)")
                #expect(!body.contains(".cer"), "\(body)")
            }
        }
    }

    /// /ready says only "ready" (or a generic 503), and answers from a recent check
    /// (`http.readyCacheSeconds`) rather than writing to disk on every call.
    @Test func readyRevealsNothingAndIsCached() async throws {
        let cached = try await TestServer { $0.readyCacheSeconds = 60 }
        try await withServer(cached, .router) { client in
            let ready = try await client.get("/ready", key: nil)
            #expect(ready.status == .ok)
            #expect(try ready.json().keys.sorted() == ["status"] && ready.json()["status"] as? String == "ready")
            // Break the storage: the cached answer stands for a minute.
            try FileManager.default.removeItem(atPath: cached.layout.uploadsDirectory)
            #expect(try await client.get("/ready", key: nil).status == .ok)
        }
        let uncached = try await TestServer { $0.readyCacheSeconds = 0 }
        try await withServer(uncached, .router) { client in
            #expect(try await client.get("/ready", key: nil).status == .ok)
            try FileManager.default.removeItem(atPath: uncached.layout.uploadsDirectory)
            let problem = try await client.get("/ready", key: nil)
            let json = try problem.expectProblem(.serviceUnavailable, code: "not_ready")
            #expect(json["detail"] as? String == "The server cannot take work now; try again shortly.")
            #expect(!problem.text.contains(uncached.scratch.path) && !problem.text.contains("MB"), "\(problem.text)")
        }
    }

    // MARK: Sign-up limits and proxies

    static let forwardedFor = HTTPField.Name("X-Forwarded-For")!

    static func signUp(_ client: any TestClientProtocol, forwardedFor: String?) async throws -> Int {
        var headers: HTTPFields = [:]
        if let forwardedFor { headers[Self.forwardedFor] = forwardedFor }
        // An empty body with Content-Length: 0 keeps the test client's one connection open after a 429.
        return Int(
            try await client.executeRequest(
                uri: "/api/v1/accounts", method: .post, headers: headers, body: ByteBuffer()
            ).status.code)
    }

    static func expectSignUp(
        _ client: any TestClientProtocol, forwardedFor: String?, _ status: Int,
        sourceLocation: SourceLocation = #_sourceLocation
    ) async throws {
        let got = try await signUp(client, forwardedFor: forwardedFor)
        #expect(got == status, "X-Forwarded-For: \(forwardedFor ?? "none")", sourceLocation: sourceLocation)
    }

    /// Behind a trusted proxy: the client is the right-most untrusted X-Forwarded-For address; an
    /// IPv6 client is counted per /64, an IPv4 one per address.
    @Test func signUpsBehindATrustedProxy() async throws {
        let server = try await TestServer {
            $0.accountsPerAddressPerHour = 2
            $0.trustedProxies = ["127.0.0.0/8", "::1/128", "10.0.0.0/8"]
        }
        try await withServer(server, .live) { client in
            // One /64, whatever the interface id.
            try await Self.expectSignUp(client, forwardedFor: "2001:db8:1:2::5", 201)
            try await Self.expectSignUp(client, forwardedFor: "2001:db8:1:2:aaaa:bbbb:cccc:dddd", 201)
            try await Self.expectSignUp(client, forwardedFor: "2001:db8:1:2::ffff", 429)
            try await Self.expectSignUp(client, forwardedFor: "2001:db8:1:3::5", 201)
            // IPv4: per address.
            try await Self.expectSignUp(client, forwardedFor: "203.0.113.7", 201)
            try await Self.expectSignUp(client, forwardedFor: "203.0.113.7", 201)
            try await Self.expectSignUp(client, forwardedFor: "203.0.113.7", 429)
            try await Self.expectSignUp(client, forwardedFor: "203.0.113.8", 201)
            // What the client put in front of the proxy's entry does not matter; trusted hops
            // after it are skipped.
            try await Self.expectSignUp(client, forwardedFor: "198.51.100.1, 203.0.113.7", 429)
            try await Self.expectSignUp(client, forwardedFor: "203.0.113.7, 10.1.2.3", 429)
            try await Self.expectSignUp(client, forwardedFor: "198.51.100.9", 201)
        }
    }

    /// Without trusted proxies, X-Forwarded-For is ignored: the TCP peer is the client.
    @Test func forwardedForIsIgnoredFromUntrustedPeers() async throws {
        let server = try await TestServer { $0.accountsPerAddressPerHour = 2 }
        try await withServer(server, .live) { client in
            try await Self.expectSignUp(client, forwardedFor: "203.0.113.1", 201)
            try await Self.expectSignUp(client, forwardedFor: "203.0.113.2", 201)
            try await Self.expectSignUp(client, forwardedFor: "203.0.113.3", 429)
            try await Self.expectSignUp(client, forwardedFor: nil, 429)
        }
    }

    // MARK: Configuration

    /// The transport keys are read from the environment (and Config/moments.json holds their defaults).
    @Test func transportKeysAreConfigurable() async throws {
        let reader = try await MomentsConfiguration.reader(
            environment: [
                "HTTP_MAX_CONNECTIONS": "7", "HTTP_IDLE_TIMEOUT_SECONDS": "12", "HTTP_HEADER_TIMEOUT_SECONDS": "3",
                "HTTP_READY_CACHE_SECONDS": "9", "HTTP_TRUSTED_PROXIES": "10.0.0.0/8,fd00::/8",
                "HTTP_EVENTS_HEARTBEAT_SECONDS": "20",
                "UPLOAD_MAX_CONCURRENT": "4", "UPLOAD_MIN_BYTES_PER_SECOND": "2048", "UPLOAD_STALL_SECONDS": "15",
                "UPLOAD_RESUMABLE_EXPIRY_HOURS": "2"
            ], file: "/nonexistent/moments.json")
        let settings = ServiceSettings(reader: reader)
        #expect(settings.maxConnections == 7 && settings.idleTimeoutSeconds == 12 && settings.headerTimeoutSeconds == 3)
        #expect(settings.readyCacheSeconds == 9 && settings.trustedProxies == ["10.0.0.0/8", "fd00::/8"])
        #expect(settings.eventsHeartbeatSeconds == 20 && settings.resumableExpiryHours == 2)
        #expect(
            settings.maxConcurrentUploads == 4 && settings.minUploadBytesPerSecond == 2048
                && settings.uploadStallSeconds == 15)
        let shipped = ServiceSettings(
            reader: try await MomentsConfiguration.reader(environment: [:], file: "Config/moments.json"))
        #expect(shipped.trustedProxies == [] && shipped.maxConnections == 1000 && shipped.headerTimeoutSeconds == 10)
        #expect(shipped.eventsHeartbeatSeconds == 15 && shipped.resumableExpiryHours == 24)
    }
}
