import Foundation
import Store
import Logging
import PostgresNIO
import Synchronization

/// Fans the store's events out to every `events()` stream of this store.
final class EventHub: Sendable {
    private let subscribers = Mutex<(next: Int, streams: [Int: AsyncStream<StoreEvent>.Continuation], finished: Bool)>(
        (0, [:], false))

    func subscribe() -> AsyncStream<StoreEvent> {
        let (stream, continuation) = AsyncStream<StoreEvent>.makeStream(bufferingPolicy: .bufferingNewest(256))
        let id: Int? = subscribers.withLock { state in
            if state.finished { return nil }
            let id = state.next
            state.next += 1
            state.streams[id] = continuation
            return id
        }
        guard let id else { continuation.finish(); return stream }
        continuation.onTermination = { [weak self] _ in
            _ = self?.subscribers.withLock { $0.streams.removeValue(forKey: id) }
        }
        return stream
    }

    func yield(_ event: StoreEvent) {
        let streams = subscribers.withLock { Array($0.streams.values) }
        for stream in streams { stream.yield(event) }
    }

    func finish() {
        let streams = subscribers.withLock { state in
            state.finished = true
            defer { state.streams = [:] }
            return Array(state.streams.values)
        }
        for stream in streams { stream.finish() }
    }
}

extension PostgresStore {
    /// The store's one listening connection: LISTEN on the five channels (jobs queued, cancels, webhooks, pushes, job changes), every notification fanned out
    /// through `hub`. After a failure it connects again (after a second) and then yields `.jobQueued`
    /// once, since notifications sent meanwhile were missed. Ends when its task is cancelled.
    static func listen(client: PostgresClient, hub: EventHub, logger: Logger, ready: AsyncStream<Void>.Continuation)
        async
    {
        var reconnecting = false
        while !Task.isCancelled {
            do {
                try await client.withConnection { connection in
                    try await connection.listen(on: queuedChannel) { queued in
                        try await connection.listen(on: cancelChannel) { cancelled in
                            try await connection.listen(on: webhookChannel) { webhooks in
                                try await connection.listen(on: pushChannel) { pushes in
                                  try await connection.listen(on: jobChangedChannel) { changed in
                                    ready.yield()
                                    if reconnecting {
                                        logger.info("PostgreSQL event listener connected again")
                                        hub.yield(.jobQueued)
                                        hub.yield(.webhookQueued)
                                        hub.yield(.pushQueued)
                                        hub.yield(.jobChanged(id: nil))
                                    }
                                    try await withThrowingTaskGroup(of: Void.self) { group in
                                        group.addTask {
                                            for try await notification in changed {
                                                hub.yield(.jobChanged(id: notification.payload))
                                            }
                                        }
                                        group.addTask {
                                            for try await _ in queued { hub.yield(.jobQueued) }
                                        }
                                        group.addTask {
                                            for try await notification in cancelled {
                                                hub.yield(.jobCancelled(id: notification.payload))
                                            }
                                        }
                                        group.addTask {
                                            for try await _ in webhooks { hub.yield(.webhookQueued) }
                                        }
                                        group.addTask {
                                            for try await _ in pushes { hub.yield(.pushQueued) }
                                        }
                                        // Any sequence ending means the connection is gone: listen again.
                                        try await group.next()
                                        group.cancelAll()
                                    }
                                  }
                                }
                            }
                        }
                    }
                }
            } catch {
                if Task.isCancelled { break }
                logger.warning(
                    "PostgreSQL event listener failed; connecting again",
                    metadata: ["error": "\(PostgresStore.reason(error))"])
            }
            if Task.isCancelled { break }
            reconnecting = true
            try? await Task.sleep(for: .seconds(1))
        }
        ready.finish()
    }
}
