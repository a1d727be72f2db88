import Foundation
import Synchronization

/// One deadline for a whole outbound attempt of an outbox (a push to APNs, a webhook POST): the
/// connection, the request, the answer's head and whatever is read or discarded of its body, all
/// within `limit`. The lease an outbox claim takes is derived from it (`leaseSeconds`), so a
/// delivery is never claimed again while an attempt at it may still be in flight, whatever the
/// deadline is set to.
public struct AttemptDeadline: Sendable, Equatable {
    public let limit: Duration

    public init(_ limit: Duration) { self.limit = limit }

    /// The attempt ran out of time.
    public struct Exceeded: Error, Sendable, Equatable {
        public init() {}
    }

    public var seconds: Double {
        Double(limit.components.seconds) + Double(limit.components.attoseconds) / 1e18
    }

    /// What the limit reads as in a message ("10 seconds", "1 second", "0.5 seconds").
    public var spoken: String {
        let value = seconds
        let number = value == value.rounded() ? String(Int(value)) : String(format: "%g", value)
        return value == 1 ? "1 second" : "\(number) seconds"
    }

    /// The HTTP client's own deadline for the answer's head, from the attempt's start: four
    /// fifths of `limit` (8 s of 10 s). AsyncHTTPClient tries a connection again until its
    /// deadline and then throws the last error (a TLS handshake refused, a connection refused),
    /// which says more than "timeout"; ending earlier than `run`, it is heard even when the
    /// cooperative pool is slow to run the error's way back (seen: over a second, 2 cores under a
    /// full test run).
    public var headLimit: Duration { limit * 4 / 5 }

    /// The lease for a claim whose attempt makes up to `sends` calls, each within this deadline:
    /// twice their longest, plus 20 s for recording the attempt (a busy store) and for the clocks
    /// of several processes to differ. 60 s for a push (two sends of 10 s: an expired provider
    /// token is replaced and the push sent again), 40 s for a webhook (one of 10 s).
    public func leaseSeconds(sends: Int = 1) -> Double {
        2 * Double(max(1, sends)) * seconds + 20
    }

    /// Runs `operation` and gives up at the deadline: the caller gets `Exceeded` then at once (its
    /// slot is free again), and `operation` is cancelled, which ends an HTTP client's request and
    /// its connection (AsyncHTTPClient resets the stream or closes the connection on cancellation,
    /// whether it was waiting for the head or reading the body). The caller's own cancellation is
    /// passed on the same way (`CancellationError`).
    ///
    /// `operation` runs in a task of its own so that giving up never waits for it to notice: a
    /// structured child would hold the caller until it returned.
    public func run<T: Sendable>(_ operation: @escaping @Sendable () async throws -> T) async throws -> T {
        let race = DeadlineRace<T>()
        let work = Task { try await operation() }
        let limit = self.limit
        let timer = Task {
            do { try await Task.sleep(for: limit) } catch { return }
            race.finish(.failure(Exceeded()))
            work.cancel()
        }
        Task {
            let result = await work.result
            timer.cancel()
            race.finish(result)
        }
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in race.install(continuation) }
        } onCancel: {
            race.finish(.failure(CancellationError()))
            work.cancel()
            timer.cancel()
        }
    }
}

/// The one outcome a deadline's caller gets: the operation's or the deadline's, whichever comes first.
final class DeadlineRace<T: Sendable>: Sendable {
    struct State {
        var continuation: CheckedContinuation<T, any Error>?
        var outcome: Result<T, any Error>?
    }

    let state = Mutex(State())

    func install(_ continuation: CheckedContinuation<T, any Error>) {
        let ready: Result<T, any Error>? = state.withLock { state in
            if let outcome = state.outcome { return outcome }
            state.continuation = continuation
            return nil
        }
        if let ready { continuation.resume(with: ready) }
    }

    func finish(_ outcome: Result<T, any Error>) {
        let waiting: CheckedContinuation<T, any Error>? = state.withLock { state in
            if state.outcome != nil { return nil }
            state.outcome = outcome
            defer { state.continuation = nil }
            return state.continuation
        }
        waiting?.resume(with: outcome)
    }
}
