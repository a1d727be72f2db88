import Foundation
import HTTPTypes
import Highlight
import HummingbirdTesting
@testable import Isolation
import Logging
import AnalysisDecode
import MediaEngine
import MediaPictures
import MomentsConfig
import Store
import Testing

/// Untrusted media is parsed only in `moments job-exec` children: their crashes, hangs and limits
/// are contained, and the server and its workers go on.
@Suite("Isolated children", .onceAcrossEngines)
struct IsolationTests {
    /// Shell: `ws` becomes the job's folder (the one place a job's child writes), from the task
    /// on standard input (`$input`): the folder of its result.
    static let workspaceOfTask =
        #"ws=$(printf '%s' "$input" | /bin/sed -e 's#\\/#/#g' | /bin/sed -n 's#.*"output":"\([^"]*\)/highlight\.mp4".*#\1#p')"#

    /// The file `name` in a folder named after `job` under `root`: a job's folder (the workspace
    /// of an S3 engine is elsewhere under the storage than the filesystem engine's).
    static func jobFile(_ name: String, job: String, under root: String) -> String? {
        guard let walk = FileManager.default.enumerator(atPath: root) else { return nil }
        for case let relative as String in walk
        where (relative as NSString).lastPathComponent == name && relative.contains(job) {
            return root + "/" + relative
        }
        return nil
    }

    /// A stand-in for `moments job-exec`: probes with the real binary, then does `onHighlight`
    /// (a shell snippet) instead of making the highlight. The child has no PATH: absolute paths only.
    static func fakeChild(in scratch: Scratch, onHighlight: String) throws -> String {
        let real = IsolationSettings.defaultExecutable()
        #expect(FileManager.default.isExecutableFile(atPath: real), "build the moments executable first (swift build)")
        let path = scratch.path("fake-moments")
        let script = """
            #!/bin/sh
            input=$(/bin/cat)
            case "$input" in
              *'"kind":"probe"'*)
                # exec: the real child is this very process (its sandbox is made for it)
                exec \(real) job-exec <<EOF
            $input
            EOF
                ;;
            esac
            \(onHighlight)
            """
        try script.write(toFile: path, atomically: true, encoding: .utf8)
        chmod(path, 0o755)
        return path
    }

    /// A child that crashes (SIGSEGV) is retried once, then the job fails for good with a clear
    /// message; the quota unit is given back, the worker time stays charged, the input is gone, and
    /// the server answers throughout.
    @Test func crashingChildFailsTheJobAfterTwoDeaths() async throws {
        let scratch = Scratch()
        let fake = try Self.fakeChild(in: scratch, onHighlight: "kill -SEGV $$")
        let server = try await TestServer { s in
            s.childExecutable = fake
            s.retryBackoffSeconds = 0
        }
        let video = try await Fixtures.data(.tiny)
        try await withServer(server, .live) { client in
            let (accountId, key) = try await client.createAccount()
            let accepted = try await client.upload(key: key, file: video, fields: [("target_duration", "5")])
            #expect(accepted.status == .ok, "\(accepted.text)")
            let job = try #require(try accepted.json()["job_id"] as? String)
            let seen = try await client.poll(job: job, key: key, timeout: 60) { $0["status"] as? String == "failed" }
            #expect(seen.last?["status"] as? String == "failed")
            let detail = try await client.get("/api/v1/jobs/\(job)", key: key).json()
            #expect(detail["attempts"] as? Int == 2, "\(detail)")
            let error = try #require(detail["error"] as? [String: Any])
            #expect(error["code"] as? String == "processing_failed")
            #expect((error["message"] as? String)?.hasPrefix("The video could not be processed") == true, "\(error)")
            #expect((try await client.get("/health", key: nil)).status == .ok)
            let ledger = try await server.service.database.ledger(accountId: accountId)
            #expect(ledger.map(\.change).reduce(0, +) == 0, "the unit is given back: \(ledger)")
            #expect(ledger.map(\.workerSeconds).reduce(0, +) > 0, "worker time is charged: \(ledger)")
        }
        #expect(server.storedFiles().isEmpty, "\(server.storedFiles())")
    }

    /// A transient failure (the disk was full when the result was written) keeps the input and
    /// retries: the second attempt delivers, the unit is consumed once, and the failed attempt's
    /// worker time is not charged (the service's fault, not the video's).
    /// (Embedded engine only: the stand-in's first-attempt marker lives in the job's folder, the one
    /// place its child may write, which the S3 engine makes afresh for each attempt.)
    @Test(.enabled(if: TestEngine.current == .embedded, "the marker does not outlive an attempt on the S3 engine"))
    func transientFailureRetriesKeepingTheInput() async throws {
        let scratch = Scratch()
        let fakePath = scratch.path("fake-moments")
        let server = try await TestServer { s in
            s.childExecutable = fakePath
            // Long enough for the status polls (every 200 ms) to see the wait even on a loaded machine.
            s.retryBackoffSeconds = 6
        }
        let real = IsolationSettings.defaultExecutable()
        let video = try await Fixtures.data(.short)
        try await withServer(server, .live) { client in
            let (accountId, key) = try await client.createAccount()
            // The marker goes where a job's child may write (its job's folder only), under the one
            // name a retry keeps there besides the input: the analysis data (an empty one is only
            // analysed again by the real child of the second attempt).
            let fake = try Self.fakeChild(
                in: scratch,
                onHighlight: """
                    \(Self.workspaceOfTask)
                    if [ ! -e "$ws/analysis-data.json" ]; then
                      : > "$ws/analysis-data.json"
                      echo '{"failure":{"kind":"io","operation":"write result","detail":"No space left on device"}}'
                      exit 3
                    fi
                    exec \(real) job-exec <<EOF
                    $input
                    EOF
                    """)
            #expect(fake == fakePath)
            let accepted = try await client.upload(key: key, file: video, fields: [("target_duration", "5")])
            let job = try #require(try accepted.json()["job_id"] as? String)
            let seen = try await client.poll(job: job, key: key, timeout: 150) {
                ["completed", "failed"].contains($0["status"] as? String ?? "")
            }
            #expect(seen.last?["status"] as? String == "completed", "\(seen.last ?? [:])")
            #expect(
                seen.contains { ($0["message"] as? String)?.hasPrefix("Waiting to try again") == true },
                "the retry is visible while it waits")
            let detail = try await client.get("/api/v1/jobs/\(job)", key: key).json()
            #expect(detail["attempts"] as? Int == 2, "\(detail)")
            let ledger = try await server.service.database.ledger(accountId: accountId)
            #expect(ledger.map(\.change).reduce(0, +) == 1, "charged once: \(ledger)")
            #expect(
                ledger.filter { $0.reason.contains("attempt 1") }.isEmpty,
                "the failed attempt is not charged: \(ledger)")
        }
    }

    /// A job's child whose re-upload look dies before answering (here: every look) does not cost
    /// the job: the worker makes the highlight in a fresh child, at the first attempt.
    @Test func lookWithoutAnAnswerFallsBackToAFreshHighlightChild() async throws {
        let scratch = Scratch()
        let real = IsolationSettings.defaultExecutable()
        let fake = scratch.path("fake-moments")
        try """
        #!/bin/sh
        IFS= read -r line
        case "$line" in
          *'"kind":"recognize"'*) exit 9 ;;
        esac
        exec \(real) job-exec <<EOF
        $line
        EOF
        """.write(toFile: fake, atomically: true, encoding: .utf8)
        chmod(fake, 0o755)
        let server = try await TestServer { s in
            s.childExecutable = fake
            s.retryBackoffSeconds = 0
        }
        let video = try await Fixtures.data(.tiny)
        try await withServer(server, .live) { client in
            let (_, key) = try await client.createAccount()
            var jobs: [String] = []
            for _ in 0..<2 {
                let accepted = try await client.upload(key: key, file: video, fields: [("target_duration", "5")])
                #expect(accepted.status == .ok, "\(accepted.text)")
                let job = try #require(try accepted.json()["job_id"] as? String)
                let seen = try await client.poll(job: job, key: key, timeout: 90) {
                    ["completed", "failed"].contains($0["status"] as? String ?? "")
                }
                #expect(seen.last?["status"] as? String == "completed", "\(seen.last ?? [:])")
                jobs.append(job)
            }
            // The second job had an earlier upload to compare with, so its child looked first (and died).
            let detail = try await client.get("/api/v1/jobs/\(jobs[1])", key: key).json()
            #expect(detail["attempts"] as? Int == 1, "no second attempt: \(detail)")
            #expect(
                detail["duplicate_of"] == nil || detail["duplicate_of"] is NSNull, "the look never answered: \(detail)")
        }
    }

    /// A child that never finishes is killed at the job's time budget; the job fails at once
    /// (a deterministic overrun is not retried).
    @Test func hangingChildIsStoppedByTheTimeBudget() async throws {
        let scratch = Scratch()
        let fake = try Self.fakeChild(in: scratch, onHighlight: "exec /bin/sleep 1000")
        let server = try await TestServer { s in
            s.childExecutable = fake
            s.timeBudgetSeconds = 2
            s.timeBudgetPerVideoSecond = 0
        }
        let video = try await Fixtures.data(.tiny)
        let started = Date()
        try await withServer(server, .live) { client in
            let (_, key) = try await client.createAccount()
            let accepted = try await client.upload(key: key, file: video, fields: [("target_duration", "5")])
            let job = try #require(try accepted.json()["job_id"] as? String)
            _ = try await client.poll(job: job, key: key, timeout: 30) { $0["status"] as? String == "failed" }
            let detail = try await client.get("/api/v1/jobs/\(job)", key: key).json()
            #expect((detail["error"] as? [String: Any])?["code"] as? String == "time_limit", "\(detail)")
            #expect(detail["attempts"] as? Int == 1)
        }
        // The 1000 s sleep is cut at the 2 s budget; the rest is the upload, the probe and the polls
        // on a loaded machine (the whole suite runs in parallel).
        #expect(Date().timeIntervalSince(started) < 45)
    }
}
