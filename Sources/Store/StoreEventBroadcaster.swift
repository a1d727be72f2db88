import Synchronization

/// Fans store events out to every current subscriber. A subscriber that is slow keeps the newest
/// few events only: an event means "look at the store again", so dropping repeats loses nothing.
public final class StoreEventBroadcaster: Sendable {
    private let subscribers = Mutex<
        (next: Int, continuations: [Int: AsyncStream<StoreEvent>.Continuation], finished: Bool)
    >((0, [:], false))

    public init() {}

    /// A stream of the events sent from now on, until the caller stops iterating or `finish()`.
    public func subscribe() -> AsyncStream<StoreEvent> {
        let (stream, continuation) = AsyncStream.makeStream(of: StoreEvent.self, bufferingPolicy: .bufferingNewest(64))
        let id = subscribers.withLock { s -> Int? in
            guard !s.finished else { return nil }
            let id = s.next
            s.next += 1
            s.continuations[id] = continuation
            return id
        }
        guard let id else {
            continuation.finish()
            return stream
        }
        continuation.onTermination = { [weak self] _ in
            _ = self?.subscribers.withLock { $0.continuations.removeValue(forKey: id) }
        }
        return stream
    }

    public func send(_ event: StoreEvent) {
        let targets = subscribers.withLock { Array($0.continuations.values) }
        for continuation in targets { continuation.yield(event) }
    }

    /// Ends every stream; later subscriptions end at once.
    public func finish() {
        let targets = subscribers.withLock { s -> [AsyncStream<StoreEvent>.Continuation] in
            s.finished = true
            defer { s.continuations.removeAll() }
            return Array(s.continuations.values)
        }
        for continuation in targets { continuation.finish() }
    }
}
