import Foundation
import Isolation
import Logging
import Synchronization
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// The sandbox's parent side (`IsolatedChild.withChild`), generic over what its children are asked
/// and answer, with shell scripts standing in for `moments job-exec`: a second task sent once the
/// first message is read, a child stopped when the task waiting for it is cancelled, a child
/// flooding its output cut off, one over its budget killed.
@Suite(.timeLimit(.minutes(2)))
struct IsolationSupervisorTests {
    static let quiet: Logger = {
        var logger = Logger(label: "test")
        logger.logLevel = .critical
        return logger
    }()

    /// A script run as the child (`settings.executable`). Written through a close-on-exec
    /// descriptor: one inherited by a process another test starts meanwhile would keep the file
    /// open for writing, and its exec would fail (ETXTBSY).
    static func child(_ scratch: Scratch, _ body: String) throws -> IsolationSettings {
        let path = scratch.path("child-\(UUID().uuidString.prefix(8))")
        let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o755)
        try #require(fd >= 0)
        let text = Array("#!/bin/sh\n\(body)\n".utf8)
        let wrote = text.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        close(fd)
        try #require(wrote == text.count)
        return IsolationSettings(executable: path, memoryBytes: 1 << 30, niceness: 0)
    }

    @Test func secondTaskIsSentAfterTheFirstMessage() async throws {
        let scratch = Scratch()
        let settings = try Self.child(
            scratch,
            """
            read first
            echo '{"progress":{"stage":"looked","fraction":0.5}}'
            read second || exit 8
            case "$second" in
            *second-task*) echo '{"failure":{"kind":"invalidInput","operation":"test","detail":"took it"}}'; exit 3;;
            esac
            exit 7
            """)
        var seen: [String] = []
        let outcome = await IsolatedChild.withChild(
            TestTask("first-task"), replies: TestReply.self, settings: settings, access: ChildAccess(), wallSeconds: 30, cpuSeconds: 30,
            cancellation: nil, logger: Self.quiet
        ) { child in
            for await message in child.messages {
                if let stage = message.progress?.stage { seen.append(stage) }
                guard child.isInputOpen else { continue }
                #expect(seen == ["looked"])
                try? await child.send(TestTask("second-task"))
                await child.finishInput()
                #expect(!child.isInputOpen)
            }
        }
        #expect(seen == ["looked"])
        guard case .failed(let reply) = outcome else {
            Issue.record("expected the second task's failure, got \(outcome)")
            return
        }
        #expect(reply.failure?.detail == "took it")
    }

    /// Without a second task the input just ends: the child reads its end.
    @Test func inputEndsWhenNothingMoreIsSent() async throws {
        let scratch = Scratch()
        let settings = try Self.child(
            scratch,
            """
            read first
            echo '{"progress":{"stage":"looked","fraction":0.5}}'
            read second && exit 7
            exit 9
            """)
        let outcome = await IsolatedChild.run(
            TestTask("only"), replies: TestReply.self, settings: settings, access: ChildAccess(), wallSeconds: 30, cpuSeconds: 30,
            cancellation: nil, logger: Self.quiet)
        guard case .abnormal(let reason, false) = outcome else {
            Issue.record("expected an abnormal end, got \(outcome)")
            return
        }
        #expect(reason.contains("status 9"), "\(reason)")
    }

    /// The task waiting for a child is cancelled: the child is stopped at once, not at the end of
    /// its budget, and the outcome says so.
    @Test func cancelledTaskStopsTheChild() async throws {
        let scratch = Scratch()
        let settings = try Self.child(
            scratch,
            """
            echo '{"progress":{"stage":"working","fraction":0}}'
            exec /bin/sleep 300
            """)
        let pid = PIDBox()
        let handed = scratch.path("handed")
        try FileManager.default.createDirectory(atPath: handed, withIntermediateDirectories: false)
        let started = ContinuousClock.now
        let waiting = Task {
            await IsolatedChild.withChild(
                TestTask("x"), replies: TestReply.self, settings: settings, access: ChildAccess(writable: [handed]),
                wallSeconds: 120, cpuSeconds: 120,
                cancellation: nil, logger: Self.quiet
            ) { child in
                pid.value = child.pid
                while await child.next() != nil {}
            }
        }
        // Cancelled once the child runs (a task cancelled before: `taskCancelledBeforeTheStart`).
        let deadline = ContinuousClock.now + .seconds(60)
        while pid.value == 0 && ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(10)) }
        try #require(pid.value > 0, "the child started")
        waiting.cancel()
        let outcome = await waiting.value
        let took = ContinuousClock.now - started
        guard case .cancelled = outcome else {
            Issue.record("expected a cancelled child, got \(outcome)")
            return
        }
        // Far below its budget (120 s) and its sleep (300 s); the unit tier's media suites share the
        // two cores, so starting the child alone can take seconds.
        #expect(took < .seconds(60), "\(took)")
        #expect(pid.value > 0 && kill(pid.value, 0) != 0, "the child was reaped")
        // The folder handed to the child is ours again, although the task that waited was cancelled.
        var info = stat()
        #expect(stat(handed, &info) == 0 && info.st_uid == geteuid(), "owner \(info.st_uid)")
    }

    /// A task cancelled before its child could start: the outcome is cancelled (not a failure to
    /// start), and no child is started.
    @Test func taskCancelledBeforeTheStart() async throws {
        let scratch = Scratch()
        let marker = scratch.path("ran")
        let settings = try Self.child(scratch, "touch '\(marker)'\nexit 0")
        let waiting = Task {
            while !Task.isCancelled { await Task.yield() }
            return await IsolatedChild.run(
                TestTask("x"), replies: TestReply.self, settings: settings, access: ChildAccess(), wallSeconds: 60,
                cpuSeconds: 60, cancellation: nil, logger: Self.quiet)
        }
        waiting.cancel()
        let outcome = await waiting.value
        guard case .cancelled = outcome else {
            Issue.record("expected a cancelled outcome, got \(outcome)")
            return
        }
        #expect(!FileManager.default.fileExists(atPath: marker), "no child was started")
    }

    /// A child writing a line without end is killed once the line passes 32 MB, long before its
    /// time budget, and its end is abnormal (not a time-out).
    @Test func floodingChildIsCutOff() async throws {
        let scratch = Scratch()
        let settings = try Self.child(scratch, "/usr/bin/yes | /usr/bin/tr -d '\\n'")
        let started = ContinuousClock.now
        let outcome = await IsolatedChild.run(
            TestTask("x"), replies: TestReply.self, settings: settings, access: ChildAccess(), wallSeconds: 100, cpuSeconds: 100,
            cancellation: nil, logger: Self.quiet)
        let took = ContinuousClock.now - started
        guard case .abnormal(let reason, let timedOut) = outcome else {
            Issue.record("expected an abnormal end, got \(outcome)")
            return
        }
        #expect(!timedOut && reason.contains("SIGKILL"), "\(reason)")
        #expect(took < .seconds(60), "\(took)")
    }

    /// A child that outlives its wall-clock budget is killed and reported as timed out.
    @Test func childOverItsBudgetIsKilled() async throws {
        let scratch = Scratch()
        let settings = try Self.child(scratch, "exec /bin/sleep 300")
        let started = ContinuousClock.now
        let outcome = await IsolatedChild.run(
            TestTask("x"), replies: TestReply.self, settings: settings, access: ChildAccess(), wallSeconds: 1, cpuSeconds: 10,
            cancellation: nil, logger: Self.quiet)
        guard case .abnormal(let reason, true) = outcome else {
            Issue.record("expected a timed-out child, got \(outcome)")
            return
        }
        #expect(reason.contains("time budget"), "\(reason)")
        // Far below its sleep (300 s), whatever the media suites beside it cost the start.
        #expect(ContinuousClock.now - started < .seconds(60))
    }
}

/// The child's pid, written by the task that started it and read by the test.
private final class PIDBox: Sendable {
    private let stored = Atomic<Int32>(0)
    var value: pid_t {
        get { stored.load(ordering: .acquiring) }
        set { stored.store(newValue, ordering: .releasing) }
    }
}

/// A task for the stand-in children: one JSON line.
struct TestTask: Encodable {
    var name: String
    init(_ name: String) { self.name = name }
}

/// What the stand-in children write: the job child's progress and failure lines, read by the
/// sandbox through `ChildReply` only.
struct TestReply: ChildReply {
    struct Progress: Decodable { var stage: String; var fraction: Double }
    struct Failure: Decodable { var detail: String }
    var progress: Progress?
    var failure: Failure?
    var answer: String?

    var progressReport: (stage: String, fraction: Double)? { progress.map { ($0.stage, $0.fraction) } }
    var isAnswer: Bool { answer != nil }
    var isFailure: Bool { failure != nil }
}

/// A temporary directory removed when released.
final class Scratch: @unchecked Sendable {
    let url = FileManager.default.temporaryDirectory.appendingPathComponent("moments-isolation-\(UUID().uuidString)")
    init() { try? FileManager.default.createDirectory(at: url, withIntermediateDirectories: true) }
    deinit { try? FileManager.default.removeItem(at: url) }
    func path(_ name: String) -> String { url.appendingPathComponent(name).path }
}
