import Foundation
#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif
import Synchronization
import Testing

/// Real `moments` processes for tests, and the HTTP calls made to them.
enum ProcessHarness {
    /// The `moments` executable next to the test bundle (make test builds it first).
    static var executable: String? {
        let dir = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
        for candidate in [dir, dir.deletingLastPathComponent()] {
            let path = candidate.appendingPathComponent("moments").path
            if FileManager.default.isExecutableFile(atPath: path) { return path }
        }
        return nil
    }

    /// Starts `moments ARGUMENTS` with the test's environment plus `environment`.
    static func start(_ executable: String, _ arguments: [String], environment: [String: String]) throws -> Process {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        try process.run()
        return process
    }

    static func waitUntilUp(_ base: String) async throws {
        for _ in 0..<400 {
            if let (_, response) = try? await URLSession.shared.data(from: URL(string: "\(base)/health")!),
                (response as? HTTPURLResponse)?.statusCode == 200
            {
                return
            }
            try await Task.sleep(for: .milliseconds(50))
        }
        Issue.record("the server at \(base) did not come up")
    }

    static func authorized(_ method: String, _ url: String, key: String?) -> URLRequest {
        var request = URLRequest(url: URL(string: url)!)
        request.httpMethod = method
        if let key { request.setValue("Bearer \(key)", forHTTPHeaderField: "Authorization") }
        return request
    }

    static func request(_ method: String, _ url: String, key: String? = nil) async throws -> [String: Any] {
        let (data, _) = try await URLSession.shared.data(for: authorized(method, url, key: key))
        return try JSONSerialization.jsonObject(with: data) as? [String: Any] ?? [:]
    }

    static func upload(_ video: Data, to url: String, key: String) async throws -> [String: Any] {
        var request = authorized("POST", url, key: key)
        request.setValue(Multipart.contentType, forHTTPHeaderField: "Content-Type")
        let body = Data(Multipart.body(file: video).readableBytesView)
        let (data, _) = try await URLSession.shared.upload(for: request, from: body)
        return try JSONSerialization.jsonObject(with: data) as? [String: Any] ?? [:]
    }
}

/// The servers `make test` starts (scripts/with-test-servers): a PostgreSQL cluster and moto's S3.
/// A test that needs one fails, saying how to start it, when it is missing.
enum TestServers {
    static var postgresURL: String {
        get throws {
            guard let url = ProcessInfo.processInfo.environment["MOMENTS_TEST_DATABASE_URL"], !url.isEmpty else {
                throw MissingTestServer(what: "PostgreSQL", how: "eval \"$(scripts/pg-test-server start)\"")
            }
            return url
        }
    }

    /// A new, empty database on the test cluster (created with psql); its URL. One at a time:
    /// PostgreSQL refuses a CREATE DATABASE while another one copies the same template. The wait
    /// and psql run on a thread of their own: a blocked pool thread would stall every server in
    /// this test process (a stall longer than a job's lease looks like a dead worker).
    static func freshDatabase() async throws -> String {
        let admin = try postgresURL
        let name = "moments_t_" + UUID().uuidString.replacingOccurrences(of: "-", with: "").prefix(16).lowercased()
        try await RawConnection.offPool { try create(name, admin: admin) }
        guard var parts = URLComponents(string: admin) else {
            throw MissingTestServer(what: "a valid MOMENTS_TEST_DATABASE_URL", how: "scripts/pg-test-server start")
        }
        parts.path = "/" + name
        return parts.string!
    }

    private static func create(_ name: String, admin: String) throws {
        try creation.withLock { _ in
            var attempt = 0
            while true {
                let psql = Process()
                psql.executableURL = URL(fileURLWithPath: "/usr/bin/env")
                psql.arguments = ["psql", admin, "-q", "-v", "ON_ERROR_STOP=1", "-c", "CREATE DATABASE \(name)"]
                try psql.run()
                psql.waitUntilExit()
                if psql.terminationStatus == 0 { return }
                attempt += 1
                guard attempt < 5 else {
                    throw MissingTestServer(
                        what: "PostgreSQL (CREATE DATABASE failed)", how: "scripts/pg-test-server start")
                }
                usleep(200_000)
            }
        }
    }

    private static let creation = Mutex(())

    /// moto's S3: endpoint and credentials.
    static var s3: (endpoint: String, accessKey: String, secretKey: String) {
        get throws {
            let env = ProcessInfo.processInfo.environment
            guard let endpoint = env["MOMENTS_TEST_S3_ENDPOINT"], let key = env["MOMENTS_TEST_S3_ACCESS_KEY_ID"],
                let secret = env["MOMENTS_TEST_S3_SECRET_ACCESS_KEY"]
            else {
                throw MissingTestServer(what: "the S3 test server", how: "eval \"$(scripts/s3-test-server start)\"")
            }
            return (endpoint, key, secret)
        }
    }
}

struct MissingTestServer: Error, CustomStringConvertible {
    var what: String
    var how: String
    var description: String { "\(what) is not running for the tests: run `\(how)` first (make test does)." }
}

extension Process {
    /// Waits for the process to end on a thread of its own, not on the pool the servers under test
    /// need (a graceful stop can take seconds on a loaded machine).
    /// Waits for the process to end; one still running after `seconds` is killed (SIGKILL) and
    /// the test records it: a process that ignores SIGTERM must not hang the suite.
    func exited(within seconds: Double = 90, sourceLocation: SourceLocation = #_sourceLocation) async {
        let ended = await eventually(within: seconds) { !self.isRunning }
        if !ended {
            let pid = processIdentifier
            let stacks = (try? await RawConnection.offPool { Process.threadStacks(pid) }) ?? "(no stacks)"
            Issue.record(
                "process \(pid) (\(arguments ?? [])) still running \(Int(seconds)) s after it was asked to stop; its threads:\n\(stacks)",
                sourceLocation: sourceLocation)
            kill(pid, SIGKILL)
        }
        _ = try? await RawConnection.offPool { self.waitUntilExit() }
    }

    /// Every thread's stack of a process that would not stop (gdb, when it is installed): what
    /// it was waiting for, for a stop that overruns once in many runs.
    static func threadStacks(_ pid: Int32) -> String {
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/gdb") else { return "(gdb is not installed)" }
        let gdb = Process()
        gdb.executableURL = URL(fileURLWithPath: "/usr/bin/gdb")
        gdb.arguments = ["-p", "\(pid)", "-batch", "-nx", "-ex", "thread apply all bt 25"]
        let output = Pipe()
        gdb.standardOutput = output
        gdb.standardError = FileHandle.nullDevice
        guard (try? gdb.run()) != nil else { return "(gdb did not start)" }
        let data = output.fileHandleForReading.readDataToEndOfFile()
        gdb.waitUntilExit()
        let lines = String(decoding: data, as: UTF8.self).split(separator: "\n")
            .filter { $0.hasPrefix("Thread ") || $0.hasPrefix("#") }
        return lines.prefix(400).joined(separator: "\n")
    }
}
