import Foundation
#if canImport(Glibc)
    import Glibc
#endif

/// Runs blocking media work on its own thread, outside Swift's cooperative pool (a render would
/// otherwise occupy one of its few threads). With `niceness` > 0 the thread, and every thread
/// FFmpeg starts from it (they inherit it), runs at lower priority than the HTTP server.
public enum EngineThread {
    public static func run<T: Sendable>(name: String, niceness: Int, _ body: @escaping @Sendable () throws -> T) async throws
        -> T
    {
        try await withCheckedThrowingContinuation { continuation in
            let thread = Thread {
                #if os(Linux)
                    // Linux keeps the nice value per thread; `who` 0 is the calling thread.
                    if niceness > 0 { _ = setpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0, Int32(niceness)) }
                #endif
                do { continuation.resume(returning: try body()) } catch { continuation.resume(throwing: error) }
            }
            thread.name = name
            thread.stackSize = 8 << 20
            thread.start()
        }
    }
}
