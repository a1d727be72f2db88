import JobMedia
import NIOPosix
import ServiceLifecycle
import Store
import Synchronization
import Workers

/// A process's start-up work, the first service of its ServiceGroup: the storage's working folders,
/// the storage lock (one process per storage folder when the store is the embedded SQLite, which
/// has no leases to tell another process's jobs from orphans), and the recovery of the jobs a crash
/// interrupted (`JobRunner.recoverAtStartup`). The services that must not begin before it (the
/// HTTP application, the workers, the dispatchers, the upload sweeper) are wrapped with
/// `then(_:)`: each starts once it is done, and none if it fails (the group then stops, with its
/// error). It is stopped last, so the lock is held until everything else has stopped; the lock is
/// let go when this object is.
public final class StartupWork: Service, Sendable {
    let layout: StorageLayout
    let exclusive: Bool
    let runner: JobRunner
    /// The storage lock once taken (nil before, or when the store is shared); `done` after the work.
    private let state = Mutex<(done: Bool, lock: StorageLock?)>((false, nil))
    private let gate = StartGate()

    init(layout: StorageLayout, exclusive: Bool, runner: JobRunner) {
        (self.layout, self.exclusive, self.runner) = (layout, exclusive, runner)
    }

    /// Does the start-up work, once: a second call returns at once (a test that did it before
    /// the group runs, then the service).
    public func perform() throws {
        try state.withLock { state in
            guard !state.done else { return }
            try layout.prepare()
            if exclusive && state.lock == nil { state.lock = try StorageLock(layout.path(".lock")) }
            try runner.recoverAtStartup()
            state.done = true
        }
    }

    public func run() async throws {
        do {
            // File system and SQLite work: on NIO's blocking pool, not the cooperative one.
            try await NIOThreadPool.singleton.runIfActive { try self.perform() }
        } catch {
            gate.fail()
            throw error
        }
        gate.open()
        // Stays until the group stops: stopped last, after every service that started after it.
        try? await gracefulShutdown()
    }

    /// `service`, started once the start-up work is done (and never if it fails or the process is
    /// stopped first).
    public func then(_ service: any Service) -> any Service { AfterStartup(gate: gate, service: service) }
}

/// A service that waits for the start-up work before it runs.
struct AfterStartup: Service {
    let gate: StartGate
    let service: any Service

    func run() async throws {
        // A stop asked for while waiting ends the wait: the service never started, so there is
        // nothing of it to stop.
        guard await cancelWhenGracefulShutdown({ await gate.wait() }) else { return }
        try await service.run()
    }
}

/// Opened once (or failed once); any number of tasks wait for it, each cancellable.
final class StartGate: Sendable {
    private enum Phase { case waiting, open, failed }
    private struct State {
        var phase = Phase.waiting
        var waiters: [Int: CheckedContinuation<Bool, Never>] = [:]
        var cancelled: Set<Int> = []
        var next = 0
    }
    private let state = Mutex(State())

    func open() { settle(.open) }
    func fail() { settle(.failed) }

    private func settle(_ phase: Phase) {
        let waiters = state.withLock { state in
            state.phase = phase
            defer { state.waiters = [:] }
            return Array(state.waiters.values)
        }
        for waiter in waiters { waiter.resume(returning: phase == .open) }
    }

    /// True once it is open; false when the work failed or the waiting task was cancelled.
    func wait() async -> Bool {
        let id = state.withLock { state in
            defer { state.next += 1 }
            return state.next
        }
        return await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
                let now: Bool? = state.withLock { state in
                    if state.cancelled.contains(id) { return false }
                    switch state.phase {
                    case .open: return true
                    case .failed: return false
                    case .waiting:
                        state.waiters[id] = continuation
                        return nil
                    }
                }
                if let now { continuation.resume(returning: now) }
            }
        } onCancel: {
            let waiter = state.withLock { state in
                state.cancelled.insert(id)
                return state.waiters.removeValue(forKey: id)
            }
            waiter?.resume(returning: false)
        }
    }
}
