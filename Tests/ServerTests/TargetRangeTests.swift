import Foundation
import HummingbirdTesting
import Testing

/// The target_duration bounds have one home, the engine's range: a service may accept any range
/// inside it, and a range outside it is refused at start-up rather than by every job's child.
@Suite("Target duration bounds", .onceAcrossEngines)
struct TargetRangeTests {
    /// Raised to 300 s (inside the engine's 600), a 300 s request is made (the clip is shorter:
    /// the highlight is the clip's best, not a failure).
    @Test func aRaisedMaximumIsMade() async throws {
        let server = try await TestServer { $0.maxTargetDuration = 300 }
        let video = try await Fixtures.data(.short)
        try await withServer(server, .live) { client in
            let (_, key) = try await client.createAccount()
            let accepted = try await client.upload(key: key, file: video, fields: [("target_duration", "300")])
            let job = try #require(try accepted.json()["job_id"] as? String, "\(accepted.text)")
            let seen = try await client.poll(job: job, key: key) {
                ["completed", "failed", "cancelled"].contains($0["status"] as? String ?? "")
            }
            #expect(seen.last?["status"] as? String == "completed", "\(seen.last ?? [:])")
        }
    }

    /// A maximum beyond what the engine makes stops `moments serve` at start, with the reason.
    @Test(.enabled(if: TestEngine.isEmbedded, "starts the executable on the embedded engines"))
    func aRangeTheEngineCannotMakeStopsStartUp() throws {
        let executable = try #require(ProcessHarness.executable, "build the moments executable first (swift build)")
        let scratch = Scratch()
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = ["serve", "--storage", scratch.path("storage")]
        var environment = ProcessInfo.processInfo.environment
        environment["UPLOAD_MAX_TARGET_DURATION"] = "5000"
        environment["HTTP_PORT"] = "0"
        process.environment = environment
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = pipe
        try process.run()
        let output = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        #expect(process.terminationStatus == 1, "\(output)")
        #expect(output.contains("upload.maxTargetDuration") && output.contains("5 to 600 seconds"), "\(output)")
    }
}
