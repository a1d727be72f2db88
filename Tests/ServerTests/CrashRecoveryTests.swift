import Foundation
#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif
import Testing

/// The real `moments serve` process, killed with SIGKILL while it renders, then started again on
/// the same storage: the job is re-queued (attempt 2) and completes.
@Suite(
    "Crash recovery", .serialized,
    .enabled(
        if: TestEngine.isEmbedded,
        "the embedded moments serve, killed and restarted on its own storage; the shared engines: ScaleOutTests"))
struct CrashRecoveryTests {
    @Test func killedWhileRenderingThenRestarted() async throws {
        let executable = try #require(ProcessHarness.executable, "build the moments executable first (swift build)")
        let scratch = Scratch()
        let port = try freePort()
        let base = "http://127.0.0.1:\(port)"
        let environment = [
            "STORAGE_PATH": scratch.path("storage"), "HTTP_PORT": String(port),
            "JOBS_PROGRESS_INTERVAL_MS": "50", "STORAGE_MIN_FREE_BYTES": "1048576"
        ]

        var server = try ProcessHarness.start(executable, ["serve", "--log-level", "warning"], environment: environment)
        defer { if server.isRunning { server.terminate() } }
        try await ProcessHarness.waitUntilUp(base)
        let account = try await ProcessHarness.request("POST", "\(base)/api/v1/accounts")
        let key = try #require(account["api_key"] as? String)
        let video = try await Fixtures.data(.long)
        let accepted = try await ProcessHarness.upload(video, to: "\(base)/api/v1/upload", key: key)
        let job = try #require(accepted["job_id"] as? String)

        // Wait until it is well into the work, then kill -9 (no chance to clean up).
        let deadline = Date().addingTimeInterval(120)
        var status: [String: Any] = [:]
        while Date() < deadline {
            status = try await ProcessHarness.request("GET", "\(base)/api/v1/jobs/\(job)/status", key: key)
            if status["status"] as? String == "processing", (status["progress"] as? Int ?? 0) >= 10 { break }
            try await Task.sleep(for: .milliseconds(50))
        }
        #expect(status["status"] as? String == "processing", "\(status)")
        kill(server.processIdentifier, SIGKILL)
        await server.exited()
        let progressBefore = status["progress"] as? Int ?? 0

        server = try ProcessHarness.start(executable, ["serve", "--log-level", "warning"], environment: environment)
        try await ProcessHarness.waitUntilUp(base)
        var last: [String: Any] = [:]
        var progress: [Int] = []
        while Date() < deadline.addingTimeInterval(120) {
            last = try await ProcessHarness.request("GET", "\(base)/api/v1/jobs/\(job)/status", key: key)
            progress.append(last["progress"] as? Int ?? -1)
            if let s = last["status"] as? String, s == "completed" || s == "failed" { break }
            try await Task.sleep(for: .milliseconds(200))
        }
        #expect(last["status"] as? String == "completed", "\(last)")
        #expect(
            progress.allSatisfy { $0 >= progressBefore } && progress == progress.sorted(),
            "progress went backwards: \(progressBefore) then \(progress)")
        let detail = try await ProcessHarness.request("GET", "\(base)/api/v1/jobs/\(job)", key: key)
        #expect(detail["attempts"] as? Int == 2)
        let (data, response) = try await URLSession.shared.data(
            for: ProcessHarness.authorized("GET", "\(base)/api/v1/jobs/\(job)/download", key: key))
        #expect((response as? HTTPURLResponse)?.statusCode == 200 && data.count > 10_000)
        // Two attempts, one charge.
        let usage =
            try await ProcessHarness.request("GET", "\(base)/api/v1/account", key: key)["usage"] as? [String: Any]
        #expect(usage?["used"] as? Int == 1, "\(usage ?? [:])")

        // SIGTERM: a clean stop.
        server.terminate()
        await server.exited()
        #expect(server.terminationReason == .exit)
    }

    /// kill -9 while an upload streams: after the restart nothing of it is left and nothing was
    /// charged; the same upload then goes through and is charged once.
    @Test func killedDuringUploadLosesNothing() async throws {
        let executable = try #require(ProcessHarness.executable, "build the moments executable first (swift build)")
        let scratch = Scratch()
        let port = try freePort()
        let base = "http://127.0.0.1:\(port)"
        let storage = scratch.path("storage")
        let environment = ["STORAGE_PATH": storage, "HTTP_PORT": String(port), "STORAGE_MIN_FREE_BYTES": "1048576"]
        var server = try ProcessHarness.start(executable, ["serve", "--log-level", "warning"], environment: environment)
        defer { if server.isRunning { server.terminate() } }
        try await ProcessHarness.waitUntilUp(base)
        let key = try #require(
            try await ProcessHarness.request("POST", "\(base)/api/v1/accounts")["api_key"] as? String)
        let video = try await Fixtures.data(.short)
        // 4 MB declared, 3 MB sent, then silence: the server is streaming it to uploads/.
        let body = Data(
            Multipart.body(file: Data((0..<(4 << 20)).map { UInt8(truncatingIfNeeded: $0 &* 2654435761 >> 13) }))
                .readableBytesView)

        let socket = try RawConnection(port: port)
        socket.send(
            "POST /api/v1/upload HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer \(key)\r\nContent-Type: \(Multipart.contentType)\r\nContent-Length: \(body.count)\r\n\r\n"
        )
        socket.send([UInt8](body.prefix(3 << 20)))
        let uploads = storage + "/uploads"
        // The bytes are being written (to an unnamed file that only gets its name once complete):
        // the server holds a file open in uploads/.
        let pid = server.processIdentifier
        let writing = await eventually(within: 20) {
            let fds = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/fd")) ?? []
            return fds.contains {
                ((try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/\(pid)/fd/\($0)")) ?? "")
                    .hasPrefix(uploads + "/")
            }
        }
        #expect(writing, "the server never opened a file in uploads/")
        kill(server.processIdentifier, SIGKILL)
        await server.exited()
        socket.close()

        server = try ProcessHarness.start(executable, ["serve", "--log-level", "warning"], environment: environment)
        try await ProcessHarness.waitUntilUp(base)
        #expect(
            ((try? FileManager.default.contentsOfDirectory(atPath: uploads)) ?? []).isEmpty,
            "a partial upload survived the restart")
        #expect(((try? FileManager.default.contentsOfDirectory(atPath: storage + "/jobs")) ?? []).isEmpty)
        var usage =
            try await ProcessHarness.request("GET", "\(base)/api/v1/account", key: key)["usage"] as? [String: Any]
        #expect(usage?["used"] as? Int == 0, "\(usage ?? [:])")
        let accepted = try await ProcessHarness.upload(video, to: "\(base)/api/v1/upload", key: key)
        #expect(accepted["job_id"] is String, "\(accepted)")
        usage = try await ProcessHarness.request("GET", "\(base)/api/v1/account", key: key)["usage"] as? [String: Any]
        #expect(usage?["used"] as? Int == 1, "\(usage ?? [:])")
        server.terminate()
        await server.exited()
    }
}

/// A port nothing listens on (bound, read, released).
func freePort() throws -> Int {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    defer { close(fd) }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    address.sin_port = 0
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    let bound = withUnsafeMutablePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
            bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0
        }
    }
    guard bound else { throw POSIXError(.EADDRINUSE) }
    return Int(UInt16(bigEndian: address.sin_port))
}
