import CIsolation
import Foundation
#if canImport(Glibc)
    import Glibc
#endif

/// The child's side of the sandbox, for the program `moments job-exec` runs: its setup before it
/// reads a task, its task lines, its answers. What the tasks mean is its client's
/// (`HighlightJob.MediaChildMain`).
public enum ChildSide {
    /// Before the task is read: picture-sized buffers mapped on their own, the process's
    /// niceness on the thread that works, and the system-call filter.
    public static func prepare() {
        ProcessMemory.mapLargeAllocations()
        adoptProcessNiceness()
        enterSandbox()
    }

    /// Installs the system-call filter (`moments_enter_sandbox`): before the task is read and any
    /// media is opened, so nothing FFmpeg parses runs without it. Where the filter cannot be
    /// installed the child goes on (its user, limits, cgroup and Landlock still hold) and says so.
    public static func enterSandbox() {
        let rc = moments_enter_sandbox()
        if rc != 0 {
            FileHandle.standardError.write(
                Data(
                    "moments job-exec: warning: no system-call filter (\(String(cString: strerror(-rc)))): running without it\n"
                        .utf8))
        }
    }

    /// Reads the task lines from standard input (split by the parent's `LineReader`): each up to a
    /// newline or the end of the input, at most 1 MB.
    public struct TaskReader {
        let fd: Int32
        private var lines = LineReader(maxLine: TaskReader.maxLine)
        private var pending: [Data] = []
        private var next = 0
        private var chunk = [UInt8](repeating: 0, count: 64 * 1024)
        private var ended = false
        static let maxLine = 1 << 20

        public init(fd: Int32) { self.fd = fd }

        /// The next non-empty line; nil at the end of the input, on a read error or an overlong line.
        public mutating func nextLine() -> Data? {
            while true {
                if next < pending.count {
                    let line = pending[next]
                    next += 1
                    if line.isEmpty { continue }
                    return line.count <= Self.maxLine ? line : nil
                }
                if ended {
                    // A last line without a newline.
                    defer { lines.buffer.removeAll() }
                    return lines.buffer.isEmpty || lines.buffer.count > Self.maxLine ? nil : lines.buffer
                }
                let n = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
                if n < 0 && errno == EINTR { continue }
                if n <= 0 { ended = true; continue }
                pending = lines.feed(chunk[0..<n])
                next = 0
                if lines.overflowed || lines.buffer.count > Self.maxLine { return nil }
            }
        }
    }

    /// The parent lowered this process's priority before exec (`jobs.niceness`), which on Linux is a
    /// property of the main thread only. Swift's async `main` parks that thread and runs the command
    /// on a dispatch worker, which libdispatch gives its queue's priority (nice 0): without this the
    /// media work, and every FFmpeg thread it starts, would compete with the API on equal terms.
    static func adoptProcessNiceness() {
        #if os(Linux)
            errno = 0
            let main = getpriority(__priority_which_t(PRIO_PROCESS.rawValue), id_t(getpid()))
            guard errno == 0, main > getpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0) else { return }
            _ = setpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0, main)
        #endif
    }

    private static let encoder = JSONEncoder()

    /// Writes `message` as one JSON line to standard output (the parent reads it as a `ChildReply`).
    public static func emit(_ message: some Encodable) {
        guard var line = try? encoder.encode(message) else { return }
        line.append(0x0A)
        line.withUnsafeBytes { raw in
            var offset = 0
            while offset < raw.count {
                let n = write(1, raw.baseAddress! + offset, raw.count - offset)
                if n < 0 { if errno == EINTR { continue }; return }
                offset += n
            }
        }
    }
}
