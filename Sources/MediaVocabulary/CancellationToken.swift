import Synchronization

/// Asks a long operation to stop: a media operation (analysis decode, render) checks it between
/// packets and inside FFmpeg's blocking I/O; the sandbox stops a child with it; a worker holds one
/// per job. Plain data, so the service holds tokens without the engine.
public final class CancellationToken: Sendable {
    private let flag = Atomic<Bool>(false)

    public init() {}

    public func cancel() { flag.store(true, ordering: .relaxed) }

    public var isCancelled: Bool { flag.load(ordering: .relaxed) }
}
