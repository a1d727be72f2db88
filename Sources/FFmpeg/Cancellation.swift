import FFmpeg
import Synchronization

/// Asks a long media operation (analysis decode, render) to stop. The operation checks it between
/// packets and inside FFmpeg's blocking I/O, so it stops well within a second and throws
/// `MediaError.Kind.cancelled`.
public final class CancellationToken: Sendable {
    private let flag = Atomic<Bool>(false)

    public init() {}

    public func cancel() { flag.store(true, ordering: .relaxed) }

    public var isCancelled: Bool { flag.load(ordering: .relaxed) }

    public func check(_ operation: String, path: String?) throws(MediaError) {
        if isCancelled {
            throw MediaError(.cancelled, operation: operation, path: path, detail: "cancelled")
        }
    }
}
