import Foundation
import HighlightJob
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

/// The child process itself: limits, niceness, the lines between parent and child, confinement,
/// memory and cancellation.
extension IsolationTests {
    /// The limits are in force in the child before it runs a single instruction of its own.
    @Test func childRunsUnderResourceLimits() async throws {
        let scratch = Scratch()
        let path = scratch.path("show-limits")
        try """
        #!/bin/sh
        echo "as=$(ulimit -v) core=$(ulimit -c) files=$(ulimit -n) cpu=$(ulimit -t) env=$(/usr/bin/env | /usr/bin/tr '\\n' ' ')" >&2
        ls /proc/self/fd >&2
        exit 9
        """.write(toFile: path, atomically: true, encoding: .utf8)
        chmod(path, 0o755)
        var settings = IsolationSettings(executable: path, memoryBytes: 512 << 20, niceness: 0)
        settings.openFiles = 32
        var logger = Logger(label: "test")
        logger.logLevel = .critical
        let outcome = await MediaChild.run(
            .probe("/nonexistent"), settings: settings, access: ChildAccess(), wallSeconds: 10, cpuSeconds: 7,
            cancellation: nil, logger: logger)
        guard case .abnormal(let reason, let timedOut) = outcome else {
            Issue.record("expected an abnormal end, got \(outcome)")
            return
        }
        #expect(!timedOut)
        #expect(reason.contains("status 9"), "\(reason)")
        #expect(reason.contains("as=524288 core=0 files=32 cpu=7"), "\(reason)")
        #expect(
            reason.contains("MOMENTS_CHILD=1") && !reason.contains("HOME="),
            "the child gets no environment of ours: \(reason)")
    }

    /// A job's child does its media work at `jobs.niceness`, in every thread that works (FFmpeg's
    /// included), so renders never compete with the API on equal terms. The threads of the child
    /// (found by its parent and its niceness) are read from /proc while it reports progress.
    @Test func childWorksAtItsNiceness() async throws {
        let scratch = Scratch()
        _ = try await Fixtures.data(.short)  // generated off the cooperative pool
        var request = HighlightRequest(source: Fixtures.path(.short))
        request.output = scratch.path("highlight.mp4")
        request.selection.targetDuration = 5
        let settings = IsolationSettings(
            executable: IsolationSettings.defaultExecutable(), memoryBytes: 2 << 30, niceness: 11)
        var logger = Logger(label: "test")
        logger.logLevel = .critical
        let access = ChildAccess(readable: [request.source], writable: [scratch.path("")])
        let (task, quiet) = (ChildTask.highlight(request), logger)
        // Clock ticks of CPU used per niceness, over the child's threads, at the last progress report.
        var busy: [Int: Int] = [:]
        let outcome = await MediaChild.run(
            task, settings: settings, access: access, wallSeconds: 120, cpuSeconds: 120,
            cancellation: nil, logger: quiet
        ) { _, _ in
            if let threads = Self.threadsOfChild(niceness: 11) { busy = threads }
        }
        guard case .answered = outcome else {
            Issue.record("the highlight did not finish: \(outcome)")
            return
        }
        let total = busy.values.reduce(0, +)
        #expect(total > 0, "the child's threads were not seen")
        #expect(busy.filter { $0.key != 11 }.values.reduce(0, +) * 20 <= total, "CPU ticks by niceness: \(busy)")
    }

    /// CPU ticks used by the threads of this process's child whose main thread runs at `niceness`,
    /// summed per thread niceness; nil when there is no such child.
    static func threadsOfChild(niceness: Int) -> [Int: Int]? {
        // /proc/<pid>/stat: "pid (comm) state ppid ..."; after the ")" field 14-15 are utime and
        // stime and 19 is the niceness (1-based, counting pid as 1).
        func fields(_ path: String) -> [Substring]? {
            guard let text = try? String(contentsOfFile: path, encoding: .utf8), let close = text.lastIndex(of: ")")
            else { return nil }
            return text[text.index(after: close)...].split(separator: " ")
        }
        let me = Int(getpid())
        for entry in (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? [] {
            guard let pid = Int(entry), let main = fields("/proc/\(pid)/stat"), main.count > 17,
                Int(main[1]) == me, Int(main[16]) == niceness
            else { continue }
            var ticks: [Int: Int] = [:]
            for tid in (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task")) ?? [] {
                guard let thread = fields("/proc/\(pid)/task/\(tid)/stat"), thread.count > 17,
                    let user = Int(thread[11]), let system = Int(thread[12]), let nice = Int(thread[16])
                else { continue }
                ticks[nice, default: 0] += user + system
            }
            return ticks
        }
        return nil
    }

    /// A job's one child: the keyframe look answers, the worker prepares the highlight from the
    /// answer, and the same process makes it. Nothing more (the input ends) is a clean end; a
    /// follow-up that is not a highlight of the same file is refused.
    @Test func oneChildLooksThenMakesTheHighlight() async throws {
        let scratch = Scratch()
        let video = scratch.path("input.mp4")
        try await Fixtures.data(.tiny).write(to: URL(fileURLWithPath: video))
        let candidates = scratch.path("candidates.json")
        try JSONEncoder().encode([ReuploadCandidate]()).write(to: URL(fileURLWithPath: candidates))
        var request = HighlightRequest(source: video)
        request.output = scratch.path("result.mp4")
        request.quality = .low
        request.selection.targetDuration = 5
        var logger = Logger(label: "test")
        logger.logLevel = .critical
        let settings = IsolationSettings(
            executable: IsolationSettings.defaultExecutable(), memoryBytes: 4 << 30, niceness: 0)
        let access = ChildAccess(writable: [scratch.path("")])
        let look = ChildTask.recognize(video, candidates: candidates, analysis: request.analysis, continues: true)
        func run(_ next: ChildTask?) async -> (ChildOutcome, [String]) {
            var stages: [String] = []
            var asked = 0
            let outcome = await MediaChild.withChild(
                look, settings: settings, access: access, wallSeconds: 60, cpuSeconds: 120, cancellation: nil,
                logger: logger, onProgress: { stage, _ in if stages.last != stage { stages.append(stage) } }
            ) { child in
                for await message in child.messages where message.recognition != nil && child.isInputOpen {
                    asked += 1
                    #expect(message.recognition != nil && message.result == nil)
                    if let next { try? await child.send(next) }
                    await child.finishInput()
                }
            }
            #expect(asked == 1)
            return (outcome, stages)
        }
        let (made, stages) = await run(.highlight(request))
        guard case .answered(let answer) = made, let result = answer.result else {
            Issue.record("expected the highlight's result, got \(made)")
            return
        }
        #expect(result.render != nil && FileManager.default.fileExists(atPath: scratch.path("result.mp4")))
        #expect(stages.first == "recognising" && stages.contains("rendering"), "\(stages)")
        let (ended, _) = await run(nil)
        guard case .answered(let only) = ended else {
            Issue.record("expected the look's answer alone, got \(ended)")
            return
        }
        #expect(only.recognition != nil && only.result == nil)
        let (refused, _) = await run(.probe(video))
        guard case .abnormal(let reason, _) = refused else {
            Issue.record("expected a refusal, got \(refused)")
            return
        }
        #expect(reason.contains("status \(ChildExit.badTask)"), "\(reason)")
    }

    /// The child's task lines: one per newline, empty ones skipped, the last one without a newline
    /// too (a task written whole, then the input closed); a line over 1 MB is refused.
    @Test func taskLinesAreReadOneAtATime() throws {
        signal(SIGPIPE, SIG_IGN)  // the writer of an overlong line meets a closed pipe
        func lines(_ bytes: Data) -> [Data?] {
            var fds: [Int32] = [-1, -1]
            #expect(pipe(&fds) == 0)
            let writeEnd = fds[1]
            let writer = Thread {
                bytes.withUnsafeBytes { _ = write(writeEnd, $0.baseAddress, $0.count) }; close(writeEnd)
            }
            writer.start()
            var reader = ChildSide.TaskReader(fd: fds[0])
            var out: [Data?] = []
            while let line = reader.nextLine() { out.append(line) }
            close(fds[0])
            return out
        }
        #expect(
            lines(Data("{\"a\":1}\n\n{\"b\":2}\n{\"c\":3}".utf8)) == [
                Data("{\"a\":1}".utf8), Data("{\"b\":2}".utf8), Data("{\"c\":3}".utf8)
            ])
        #expect(lines(Data()).isEmpty)
        #expect(
            lines(Data(repeating: 0x41, count: (1 << 20) + 10) + Data("\n{}\n".utf8)).isEmpty,
            "an overlong line ends the input")
    }

    /// The parent's reader of a child's output looks at each byte once: a 33 MB line without a
    /// newline, fed 64 KB at a time as the child writes it, is refused as soon as it passes the
    /// 32 MB limit, in a time proportional to its length (it used to be searched again from its
    /// start on every read: minutes of the server's CPU).
    @Test func overlongLineIsRefusedInLinearTime() {
        var reader = LineReader()
        let chunk = [UInt8](repeating: 0x41, count: 64 * 1024)
        let started = Date()
        var fed = 0, lines = 0
        while fed < 33 << 20 && !reader.overflowed {
            lines += reader.feed(chunk[...]).count
            fed += chunk.count
        }
        let seconds = Date().timeIntervalSince(started)
        #expect(reader.overflowed && lines == 0)
        #expect(fed == (32 << 20) + chunk.count, "refused at the read that passed the limit: \(fed)")
        #expect(reader.buffer.isEmpty, "nothing of the line is kept")
        #expect(reader.feed(Array("{}\n".utf8)[...]).isEmpty, "a broken stream stays broken")
        #expect(seconds < 10, "\(seconds) s")
    }

    /// Many small lines, some split across reads: each one whole, in order, in linear time (each
    /// line used to move the rest of the buffer).
    @Test func manySmallLinesAreSplitInLinearTime() {
        var reader = LineReader()
        var stream = [UInt8]()
        for i in 0..<400_000 { stream += Array("{\"n\":\(i)}\n".utf8) }
        let started = Date()
        var lines: [Data] = []
        var offset = 0
        while offset < stream.count {
            let end = min(stream.count, offset + 64 * 1024 - 7)  // reads that end inside a line
            lines += reader.feed(stream[offset..<end])
            offset = end
        }
        let seconds = Date().timeIntervalSince(started)
        #expect(lines.count == 400_000 && !reader.overflowed && reader.buffer.isEmpty)
        #expect(lines.first == Data("{\"n\":0}".utf8) && lines.last == Data("{\"n\":399999}".utf8))
        #expect(lines[123_456] == Data("{\"n\":123456}".utf8))
        #expect(seconds < 10, "\(seconds) s")
        // A line of exactly the limit passes; one byte more does not.
        var small = LineReader(maxLine: 8)
        #expect(small.feed(Array("12345678\n".utf8)[...]) == [Data("12345678".utf8)])
        #expect(
            small.feed(Array("1234".utf8)[...]).isEmpty && small.feed(Array("56789".utf8)[...]).isEmpty
                && small.overflowed)
    }

    /// The child sees only its own files: it cannot read another account's video or write
    /// anywhere but its job's folder (Landlock), even if FFmpeg were made to try.
    @Test func childIsConfinedToItsFiles() async throws {
        try #require(ChildAccess.isEnforced, "this kernel offers no Landlock: children would run unconfined")
        let scratch = Scratch()
        let secret = scratch.path("another-account.mp4")
        try Data("pixels".utf8).write(to: URL(fileURLWithPath: secret))
        let own = scratch.path("job")
        try FileManager.default.createDirectory(atPath: own, withIntermediateDirectories: true)
        let path = scratch.path("try-files")
        try """
        #!/bin/sh
        /bin/cat \(secret) >/dev/null 2>&1 && echo "read-secret:yes" >&2 || echo "read-secret:no" >&2
        echo x > \(own)/out 2>/dev/null && echo "write-own:yes" >&2 || echo "write-own:no" >&2
        echo x > \(scratch.path("elsewhere")) 2>/dev/null && echo "write-elsewhere:yes" >&2 || echo "write-elsewhere:no" >&2
        /bin/ls \(scratch.path("")) >/dev/null 2>&1 && echo "list-storage:yes" >&2 || echo "list-storage:no" >&2
        exit 9
        """.write(toFile: path, atomically: true, encoding: .utf8)
        chmod(path, 0o755)
        var logger = Logger(label: "test")
        logger.logLevel = .critical
        let outcome = await MediaChild.run(
            .probe(secret), settings: IsolationSettings(executable: path, memoryBytes: 1 << 30, niceness: 0),
            access: ChildAccess(writable: [own]), wallSeconds: 10, cpuSeconds: 10, cancellation: nil, logger: logger)
        guard case .abnormal(let reason, _) = outcome else {
            Issue.record("expected an abnormal end, got \(outcome)")
            return
        }
        for expected in ["read-secret:no", "write-own:yes", "write-elsewhere:no", "list-storage:no"] {
            #expect(reason.contains(expected), "\(expected): \(reason)")
        }
        #expect(!FileManager.default.fileExists(atPath: scratch.path("elsewhere")))
    }

    /// A real child with too little memory cannot take the server down: the probe is refused
    /// cleanly and the next upload, with enough memory, works.
    @Test func outOfMemoryChildIsContained() async throws {
        let server = try await TestServer { s in s.childMemoryBytes = 64 << 20 }
        let video = try await Fixtures.data(.tiny)
        try await withServer(server, .router) { client in
            let (_, key) = try await client.createAccount()
            let refused = try await client.upload(key: key, file: video)
            try refused.expectProblem(.unprocessableContent, code: "unreadable")
            expectNoInternals(refused.text, server: server)
        }
        #expect(server.storedFiles().isEmpty)
    }

    /// Cancelling a job stops its child at once (SIGTERM to its process group).
    @Test func cancelStopsTheChild() async throws {
        let scratch = Scratch()
        let fakePath = scratch.path("fake-moments")
        let server = try await TestServer { s in s.childExecutable = fakePath }
        let video = try await Fixtures.data(.tiny)
        try await withServer(server, .live) { client in
            let (_, key) = try await client.createAccount()
            // The child notes its pid where it may write: its job's folder (read while it runs).
            _ = try Self.fakeChild(
                in: scratch, onHighlight: "\(IsolationTests.workspaceOfTask)\necho $$ > \"$ws/child.pid\"; exec /bin/sleep 1000")
            let accepted = try await client.upload(key: key, file: video, fields: [("target_duration", "5")])
            let job = try #require(try accepted.json()["job_id"] as? String)
            _ = try await client.poll(job: job, key: key, timeout: 30) { $0["status"] as? String == "processing" }
            var pid: pid_t = 0
            for _ in 0..<100 where pid == 0 {
                pid =
                    IsolationTests.jobFile("child.pid", job: job, under: server.layout.root).flatMap {
                        try? String(contentsOfFile: $0, encoding: .utf8)
                    }.flatMap {
                        pid_t($0.trimmingCharacters(in: .whitespacesAndNewlines))
                    } ?? 0
                try await Task.sleep(for: .milliseconds(50))
            }
            #expect(pid > 0 && kill(pid, 0) == 0, "the child is running")
            let cancelled = try await client.get("/api/v1/jobs/\(job)", key: key, method: .delete)
            #expect(cancelled.status == .ok)
            // DELETE returns once the worker has stopped the child (or after its 3 s grace).
            var gone = false
            for _ in 0..<100 where !gone {
                gone = kill(pid, 0) != 0 && errno == ESRCH
                if !gone { try await Task.sleep(for: .milliseconds(50)) }
            }
            #expect(gone, "the child \(pid) survived the cancel")
            #expect(server.service.runner.runningJobIDs.isEmpty)
        }
    }
}
