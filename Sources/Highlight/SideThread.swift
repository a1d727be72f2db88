import FFmpeg
import Foundation
import MediaEngine

/// Blocking media work run beside the caller's on a thread of its own (the engine's threads are
/// never Swift's cooperative pool): `wait()` blocks until it is done and returns its outcome.
/// The caller must wait before it returns, whatever else fails, so nothing outlives the call.
final class SideThread: @unchecked Sendable {
    private var failure: MediaError?
    private let done = DispatchSemaphore(value: 0)

    init(name: String, _ work: @escaping @Sendable () throws(MediaError) -> Void) {
        let thread = Thread { [self] in
            do throws(MediaError) { try work() } catch { failure = error }
            done.signal()
        }
        thread.name = name
        // FFmpeg's decoders want more stack than a default secondary thread has.
        thread.stackSize = 8 << 20
        thread.start()
    }

    /// Blocks until the work is done; rethrows its error.
    func wait() throws(MediaError) {
        done.wait()
        if let failure { throw failure }
    }
}
