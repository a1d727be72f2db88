import CIsolation
import Foundation
import Logging
import MediaVocabulary
import NIOPosix

/// One JSON line a child writes. The sandbox reads only what these say (progress, an answer, a
/// reported failure); what the messages hold is its client's (the job child's protocol).
public protocol ChildReply: Decodable, Sendable {
    /// The stage and the fraction done, when this line reports progress.
    var progressReport: (stage: String, fraction: Double)? { get }
    /// An answer to the task: the last one read is the outcome's.
    var isAnswer: Bool { get }
    /// A failure the child reports (the input's fault), exiting with `ChildExit.mediaError`.
    var isFailure: Bool { get }
}

/// How a child ended.
public enum IsolatedOutcome<Reply: ChildReply>: Sendable {
    /// It answered (a probe or a highlight result).
    case answered(Reply)
    /// It reported a failure: the input's fault (not a crash). The reply says which.
    case failed(Reply)
    /// Stopped on request (cancel or shutdown).
    case cancelled
    /// It died or misbehaved: a signal (crash, out of memory, CPU limit), a time budget overrun, an
    /// exit without an answer. `reason` is for the log.
    case abnormal(reason: String, timedOut: Bool)
    /// It was not started, or stopped before its program began, because a layer of its sandbox
    /// could not be set up (`IsolationLayer`): the operator's to fix. `reason` is for the log.
    case sandboxUnavailable(reason: String)
}

/// Runs tasks in `moments job-exec` children with resource limits, talking to them over
/// non-blocking pipes: nothing here holds a thread while a child works. Generic over what the
/// child is asked (`Task`, one JSON line) and what it answers (`Reply`, JSON lines): the sandbox
/// knows no media; the job child (`HighlightJob.MediaChild`) is its client.
public enum IsolatedChild {
    /// Runs one task in a child, reporting its progress; its answer, failure or end.
    public static func run<Task: Encodable, Reply: ChildReply>(
        _ task: Task, replies: Reply.Type, settings: IsolationSettings, access: ChildAccess, wallSeconds: Double,
        cpuSeconds: UInt64, cancellation: CancellationToken?, logger: Logger,
        onProgress: @escaping (String, Double) -> Void = { _, _ in }
    ) async -> IsolatedOutcome<Reply> {
        await withChild(
            task, replies: replies, settings: settings, access: access, wallSeconds: wallSeconds,
            cpuSeconds: cpuSeconds, cancellation: cancellation, logger: logger, onProgress: onProgress
        ) { child in
            await child.finishInput()
        }
    }

    /// Starts a child on `task` and hands it to `body`, which reads its messages and may `send` it
    /// a second task (for a recognition that `continues`) before it finishes the input. Once `body`
    /// returns, the input is closed, the rest of the output read, and the child's end awaited: the
    /// outcome is the last task's (its answer, failure or end). The limits hold for both tasks
    /// together; a cancelled task stops the child, and nothing it started outlives this call.
    public static func withChild<Task: Encodable, Reply: ChildReply>(
        _ task: Task, replies: Reply.Type, settings: IsolationSettings, access: ChildAccess, wallSeconds: Double,
        cpuSeconds: UInt64, cancellation: CancellationToken?, logger: Logger,
        onProgress: @escaping (String, Double) -> Void = { _, _ in },
        _ body: (ChildSession<Reply>) async -> Void
    ) async -> IsolatedOutcome<Reply> {
        var line: Data
        do { line = try JSONEncoder().encode(task) } catch {
            return .abnormal(reason: "cannot encode the task: \(error)", timedOut: false)
        }
        line.append(0x0A)
        if cancellation?.isCancelled == true || _Concurrency.Task.isCancelled { return .cancelled }
        let spawned: SpawnedChild
        switch await spawn(settings: settings, access: access, cpuSeconds: cpuSeconds, logger: logger) {
        case .success(let child): spawned = child
        case .failure(let failure) where failure.cancelled: return .cancelled
        case .failure(let failure) where failure.sandbox: return .sandboxUnavailable(reason: failure.reason)
        case .failure(let failure): return .abnormal(reason: failure.reason, timedOut: false)
        }
        let watch = ChildWatch(
            pid: spawned.pid, wallSeconds: wallSeconds, cancellation: cancellation, logger: logger)
        let status: ChildExitStatus, session: (answer: Reply?, failure: Reply?, wrote: Bool)
        do {
            let pipes = try await ChildPipes.open(spawned, watch: watch)
            (status, session) = try await pipes.output.executeThenClose { lines in
                let child = ChildSession<Reply>(
                    pid: spawned.pid, lines: lines, input: pipes.input, watch: watch, logger: logger,
                    onProgress: onProgress)
                return await converse(child, first: line, watch: watch, body)
            }
        } catch {
            logger.warning("cannot read a child's pipes", metadata: ["error": "\(error)"])
            _ = moments_kill_group(spawned.pid, SIGKILL)
            (status, session) = (await watch.run(), (nil, nil, false))
        }
        await endCgroup(spawned.cgroup)
        await release(spawned)
        let stderrText = watch.errorText
        if !stderrText.isEmpty { logger.debug("child stderr", metadata: ["text": "\(stderrText.suffix(2000))"]) }
        return outcome(
            status, answer: session.answer, failure: session.failure, wrote: session.wrote, watch: watch,
            wallSeconds: wallSeconds)
    }

    /// The first task, `body`, the rest of the output, while `watch` keeps the child in its limits.
    private static func converse<Reply: ChildReply>(
        _ child: ChildSession<Reply>, first line: Data, watch: ChildWatch, _ body: (ChildSession<Reply>) async -> Void
    ) async -> (ChildExitStatus, (answer: Reply?, failure: Reply?, wrote: Bool)) {
        await withTaskGroup(of: ChildExitStatus.self) { group in
            group.addTask { await watch.run() }
            // The task is small (well under a pipe's buffer); the child reads it whole first.
            let wrote = (try? await child.sendLine(line)) != nil
            if wrote { await body(child) }
            await child.finishInput()
            while await child.next() != nil {}
            let status = await group.next() ?? ChildExitStatus(raw: 0)
            return (status, (child.answer, child.failure, wrote))
        }
    }

    /// Ends the rest of the child's cgroup (off the cooperative pool: it waits for the cgroup to empty).
    private static func endCgroup(_ cgroup: ChildCgroup?) async {
        guard let cgroup else { return }
        await cleanUp { cgroup.end() }
    }

    /// Takes the child's folders back and frees its user, once it and what it started are gone.
    private static func release(_ spawned: SpawnedChild) async {
        guard let claim = spawned.claim else { return }
        await cleanUp {
            takeBack(spawned.handedOver)
            ChildUserSlots.shared.release(claim)
        }
    }

    /// Runs blocking clean-up on NIO's blocking pool even when the task waiting for the child was
    /// cancelled (that is when a child is most often stopped): the pool skips the work of a
    /// cancelled task, so it is submitted from a task of its own, which nothing cancels.
    private static func cleanUp(_ work: @escaping @Sendable () -> Void) async {
        await _Concurrency.Task.detached {
            try? await NIOThreadPool.singleton.runIfActive(work)
        }.value
    }

    static func outcome<Reply: ChildReply>(
        _ status: ChildExitStatus, answer: Reply?, failure: Reply?, wrote: Bool, watch: ChildWatch,
        wallSeconds: Double
    ) -> IsolatedOutcome<Reply> {
        let timedOut = watch.timedOut
        let stderrText = watch.errorText
        if watch.cancelled && answer == nil { return .cancelled }
        if let code = status.code {
            if code == 0, let answer { return .answered(answer) }
            if code == ChildExit.mediaError, let failure { return .failed(failure) }
            if code == ChildExit.cancelled { return .cancelled }
            if let layer = sandboxExits[code] { return .sandboxUnavailable(reason: "the child could not \(layer)") }
            return .abnormal(
                reason:
                    "the child exited with status \(code) without an answer\(wrote ? "" : " (it did not take the task)")"
                    + (stderrText.isEmpty ? "" : ": \(stderrText.suffix(300))"), timedOut: timedOut)
        }
        let signal = status.signal ?? 0
        let name =
            signal == SIGKILL
            ? (timedOut
                ? "SIGKILL (time budget of \(Int(wallSeconds)) s exceeded)" : "SIGKILL (out of memory or killed)")
            : signal == SIGXCPU
                ? "SIGXCPU (CPU limit)"
                : signal == SIGSEGV ? "SIGSEGV (crash)" : signal == SIGABRT ? "SIGABRT (abort)" : "signal \(signal)"
        return .abnormal(
            reason: "the child died: \(name)" + (stderrText.isEmpty ? "" : ": \(stderrText.suffix(300))"),
            timedOut: timedOut)
    }

    /// For the server and worker processes, at startup: not dumpable (PR_SET_DUMPABLE 0), so no
    /// process of the same user without CAP_SYS_PTRACE (a child of a server that is not root, say)
    /// reads this process's environment (its credentials) or memory from /proc, and no core dump
    /// writes them to disk. A failure is logged, not fatal.
    public static func protectServerProcess(logger: Logger) {
        let rc = moments_set_dumpable(0)
        if rc != 0 {
            logger.warning(
                "cannot make this process undumpable", metadata: ["error": "\(String(cString: strerror(-rc)))"])
        }
    }

    /// Whether this process is dumpable (its /proc files open to processes of its user); settable
    /// for tests.
    public static var isDumpable: Bool {
        get { moments_is_dumpable() != 0 }
        set { _ = moments_set_dumpable(newValue ? 1 : 0) }
    }

    /// How long the pipes are still read once the child has ended or was killed.
    static let drainSeconds = ChildWatch.drainSeconds
}

/// What the child could not set up before exec, by its exit status (`moments_spawn_child`).
let sandboxExits: [Int32: String] = [
    120: "set its resource limits", 121: "install its system-call filter", 122: "make its view of the storage",
    123: "switch to its unprivileged user", 124: "join its cgroup", 125: "be confined to its files (Landlock)",
]

/// Exit statuses of `moments job-exec` besides 0 (answered).
public enum ChildExit {
    public static let mediaError: Int32 = 3
    public static let badTask: Int32 = 4
    public static let cancelled: Int32 = 5
}
