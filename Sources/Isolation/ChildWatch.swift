import CIsolation
import Foundation
import Logging
import MediaVocabulary
import NIOCore
import NIOPosix
import Synchronization

/// How a child process ended, as waitpid reported it.
public struct ChildExitStatus: Sendable, Equatable {
    /// The raw wait status.
    public var raw: Int32
    /// Its exit code, when it exited.
    public var code: Int32? { moments_exited(raw) != 0 ? moments_exit_code(raw) : nil }
    /// The signal that ended it, when one did.
    public var signal: Int32? { moments_signaled(raw) != 0 ? moments_term_signal(raw) : nil }
}

/// Keeps one child within its limits while the parent talks to it: its wall-clock budget (then
/// SIGKILL), a cancellation (SIGTERM, SIGKILL 3 s later), the end of its pipes; then ends its
/// process group and reaps it. Whoever else holds the pipes (something the child started), they
/// are read only a moment after the child ended: the deadline holds whatever it does.
final class ChildWatch: Sendable {
    struct State {
        var timedOut = false
        var cancelled = false
        var overflowed = false
        var termSentAt: ContinuousClock.Instant?
        var endedAt: ContinuousClock.Instant?
        var outputOpen = true
        var errorsOpen = true
        var errorTail = Data()
        var channels: [Channel] = []
        /// The watcher's pause, ended early when a pipe closes.
        var wake: EventLoopPromise<Void>?
    }

    let pid: pid_t
    let wallSeconds: Double
    let cancellation: CancellationToken?
    let logger: Logger
    let started = ContinuousClock.now
    let state = Mutex(State())
    private let loop = MultiThreadedEventLoopGroup.singleton.any()

    /// How long the pipes are still read once the child has ended or was killed.
    static let drainSeconds = 1.0
    /// How long a child asked to stop (SIGTERM) has before it is killed.
    static let termSeconds = 3.0
    /// How often the child's state is looked at when nothing wakes the watcher earlier.
    static let interval = TimeAmount.milliseconds(50)

    init(pid: pid_t, wallSeconds: Double, cancellation: CancellationToken?, logger: Logger) {
        self.pid = pid; self.wallSeconds = wallSeconds; self.cancellation = cancellation; self.logger = logger
    }

    var timedOut: Bool { state.withLock { $0.timedOut } }
    var cancelled: Bool { state.withLock { $0.cancelled } }
    var errorText: String {
        let tail = state.withLock { $0.errorTail }
        return String(decoding: tail, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// Notes when the output (or standard error) pipe closes: once both have, the child is done.
    func watchClosing(_ channel: Channel, isOutput: Bool) {
        state.withLock { $0.channels.append(channel) }
        channel.closeFuture.whenComplete { _ in
            self.state.withLock { if isOutput { $0.outputOpen = false } else { $0.errorsOpen = false } }
            self.wakeUp()
        }
    }

    func outputOverflowed() {
        _ = moments_kill_group(pid, SIGKILL)
        state.withLock {
            $0.overflowed = true
            $0.endedAt = $0.endedAt ?? .now
        }
    }

    func appendErrors(_ bytes: ByteBufferView) {
        state.withLock {
            $0.errorTail.append(contentsOf: bytes)
            if $0.errorTail.count > 8192 { $0.errorTail.removeFirst($0.errorTail.count - 8192) }
        }
    }

    /// Asks the child to stop (SIGTERM; SIGKILL if it has not ended `termSeconds` later).
    func stop() {
        let first = state.withLock { s -> Bool in
            guard s.termSentAt == nil else { return false }
            s.cancelled = true
            s.termSentAt = .now
            return true
        }
        if first { _ = moments_kill_group(pid, SIGTERM) }
    }

    /// Watches the child until it is done (both pipes closed, or a moment after it ended), then
    /// kills what is left of its process group and reaps it. A cancelled task stops the child.
    func run() async -> ChildExitStatus {
        while !step(now: .now) {
            if Task.isCancelled { stop() }
            await pause(Self.interval)
        }
        let channels = state.withLock { $0.channels }
        for channel in channels { channel.close(promise: nil) }
        // The child's process group goes with it (the child itself is not reaped yet, so its pid
        // and group id are still its own).
        _ = moments_kill_group(pid, SIGKILL)
        while moments_has_exited(pid) == 0 { await pause(.milliseconds(5)) }
        var status: Int32 = 0
        _ = moments_wait(pid, &status, 1)
        return ChildExitStatus(raw: status)
    }

    /// One look at the child: kills it when its budget is spent or a stop is overdue; true once
    /// the watch is over.
    private func step(now: ContinuousClock.Instant) -> Bool {
        if cancellation?.isCancelled == true { stop() }
        let exited = moments_has_exited(pid) == 1
        let (kill, over, stuck) = state.withLock { s -> (Bool, Bool, Bool) in
            var kill = false
            if !s.timedOut && seconds(now - started) > wallSeconds {
                s.timedOut = true
                kill = true
                s.endedAt = s.endedAt ?? now
            }
            if let sent = s.termSentAt, seconds(now - sent) > Self.termSeconds {
                kill = true
                s.endedAt = s.endedAt ?? now
            }
            if s.endedAt == nil && exited { s.endedAt = now }
            if !s.outputOpen && !s.errorsOpen { return (kill, true, false) }
            if let ended = s.endedAt, seconds(now - ended) > Self.drainSeconds { return (kill, true, true) }
            return (kill, false, false)
        }
        if kill { _ = moments_kill_group(pid, SIGKILL) }
        if stuck { logger.warning("stopped reading a child's pipes: something it started still holds them") }
        return over
    }

    /// Waits `amount`, or less when a pipe closes; not cut short by the task's cancellation (the
    /// watch goes on until the child is gone).
    private func pause(_ amount: TimeAmount) async {
        let promise = loop.makePromise(of: Void.self)
        let closed = state.withLock { s -> Bool in
            s.wake = promise
            return !s.outputOpen && !s.errorsOpen
        }
        if closed { wakeUp() }
        let timer = loop.scheduleTask(in: amount) { self.wakeUp() }
        try? await promise.futureResult.get()
        timer.cancel()
    }

    private func wakeUp() {
        let promise = state.withLock { s -> EventLoopPromise<Void>? in
            defer { s.wake = nil }
            return s.wake
        }
        promise?.succeed()
    }

    private func seconds(_ duration: Duration) -> Double {
        let parts = duration.components
        return Double(parts.seconds) + Double(parts.attoseconds) / 1e18
    }
}
