import Foundation
import MomentsConfig
import Testing

/// scripts/apns-standin run for one test: a local APNs over TLS and HTTP/2 with its own CA and
/// signing key, checking each request as Apple does and logging it (see the script's doc). Started
/// by the test itself; a missing Python package fails the test with the install command.
final class APNsStandIn: @unchecked Sendable {
    static let keyId = "ABC123DEFG"
    static let teamId = "TEAM123456"
    static let topic = "app.moments.test"

    /// One request as the stand-in logged it.
    struct Hit: Decodable, Sendable {
        struct Claims: Decodable, Sendable { var iss: String?; var iat: Int? }
        struct Header: Decodable, Sendable { var alg: String?; var kid: String? }
        struct Payload: Decodable, Sendable {
            struct APS: Decodable, Sendable {
                struct Alert: Decodable, Sendable { var title: String; var body: String }
                var alert: Alert
                var sound: String
            }
            var aps: APS
            var job_id: String
            var status: String
        }
        var received: Double
        var http_version: String?
        var authority: String?
        var path: String
        var token: String
        var authorization: String?
        var topic: String?
        var push_type: String?
        var priority: String?
        var collapse_id: String?
        var jwt_header: Header?
        var claims: Claims?
        var problems: [String]
        var payload: Payload?
        var status: Int?
        var reason: String?
    }

    struct Failure: Error, CustomStringConvertible { var description: String }

    let scratch = Scratch()
    let process = Process()
    private(set) var port = 0

    var directory: String { scratch.path }
    var caFile: String { scratch.path("ca.pem") }
    var keyFile: String { scratch.path("apns-key.p8") }

    /// Starts the stand-in and waits (up to 30 s) until it listens.
    static func start() async throws -> APNsStandIn {
        let standIn = APNsStandIn()
        try await standIn.launch()
        return standIn
    }

    private func launch() async throws {
        let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent(
            "../../scripts/apns-standin"
        ).standardized.path
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = [
            "python3", script, "--dir", scratch.path, "--key-id", Self.keyId, "--team-id", Self.teamId, "--topic",
            Self.topic
        ]
        let errors = scratch.path("stderr.log")
        _ = FileManager.default.createFile(atPath: errors, contents: nil)
        process.standardError = try FileHandle(forWritingTo: URL(fileURLWithPath: errors))
        process.standardOutput = FileHandle.nullDevice
        try process.run()
        let ready = scratch.path("ready.json")
        let process = self.process
        port = try await RawConnection.offPool {
            let deadline = Date().addingTimeInterval(30)
            while Date() < deadline {
                if let data = FileManager.default.contents(atPath: ready),
                    let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any],
                    let port = object["port"] as? Int
                {
                    return port
                }
                if !process.isRunning {
                    let text = (try? String(contentsOfFile: errors, encoding: .utf8)) ?? ""
                    throw Failure(
                        description:
                            "scripts/apns-standin did not start (make test-tools installs what it needs: python3 -m pip install hypercorn pyjwt cryptography): \(text)"
                    )
                }
                Thread.sleep(forTimeInterval: 0.05)
            }
            throw Failure(description: "scripts/apns-standin did not listen within 30 s")
        }
    }

    /// Stops the stand-in (its own process only): SIGTERM, then SIGKILL after 5 s.
    func stop() async {
        guard process.isRunning else { return }
        process.terminate()
        let process = self.process
        _ = try? await RawConnection.offPool {
            let deadline = Date().addingTimeInterval(5)
            while process.isRunning && Date() < deadline { Thread.sleep(forTimeInterval: 0.05) }
            if process.isRunning { kill(process.processIdentifier, SIGKILL) }
            process.waitUntilExit()
        }
    }

    /// Runs `body` with the stand-in, stopping it after.
    static func with<T: Sendable>(_ body: (APNsStandIn) async throws -> T) async throws -> T {
        let standIn = try await start()
        do {
            let result = try await body(standIn)
            await standIn.stop()
            return result
        } catch {
            await standIn.stop()
            throw error
        }
    }

    /// Push settings pointing at the stand-in: production at 127.0.0.1, sandbox at localhost
    /// (one server; the request's authority tells them apart).
    func configure(_ push: inout PushSettings) {
        push.keyPath = keyFile
        push.keyId = Self.keyId
        push.teamId = Self.teamId
        push.topic = Self.topic
        push.endpoint = "https://127.0.0.1:\(port)"
        push.sandboxEndpoint = "https://localhost:\(port)"
        push.caFile = caFile
        push.retryBackoffSeconds = 0.3
    }

    /// Every request received so far.
    func hits() async throws -> [Hit] {
        let path = scratch.path("requests.jsonl")
        return try await RawConnection.offPool {
            try Self.completeLines(path).map { try JSONDecoder().decode(Hit.self, from: Data($0.utf8)) }
        }
    }

    /// The log's lines the stand-in has finished writing: a line still being appended (no newline
    /// yet) is left for the next read.
    static func completeLines(_ path: String) -> [Substring] {
        guard let text = try? String(contentsOfFile: path, encoding: .utf8) else { return [] }
        var lines = text.split(separator: "\n", omittingEmptySubsequences: false)
        lines.removeLast()  // empty after the last newline, or the unfinished line
        return lines.filter { !$0.isEmpty }
    }

    /// A tarpit's stream that ended (the client reset it): when it was received and when it ended.
    struct Ended: Decodable, Sendable {
        var token: String
        var received: Double
        var ended: Double
    }

    /// Every tarpit stream that ended so far.
    func ended() async throws -> [Ended] {
        let path = scratch.path("ended.jsonl")
        return try await RawConnection.offPool {
            try Self.completeLines(path).map { try JSONDecoder().decode(Ended.self, from: Data($0.utf8)) }
        }
    }

    /// Polls the log until `done` holds (or `timeout` seconds pass); the last log either way.
    func hits(timeout: Double = 20, until done: ([Hit]) -> Bool) async throws -> [Hit] {
        let deadline = Date().addingTimeInterval(timeout)
        var last: [Hit] = []
        while Date() < deadline {
            last = try await hits()
            if done(last) { return last }
            try await Task.sleep(for: .milliseconds(50))
        }
        Issue.record(
            "the APNs stand-in did not see the expected requests; it saw: \(last.map { "\($0.token.prefix(6)) \($0.status.map(String.init) ?? "-") \($0.reason ?? "")" })"
        )
        return last
    }

    /// Device tokens whose first characters tell the stand-in how to answer.
    static func token(_ prefix: String, _ n: Int) -> String {
        let tail = String(format: "%x", n)
        return prefix + String(repeating: "0", count: 64 - prefix.count - tail.count) + tail
    }
}
