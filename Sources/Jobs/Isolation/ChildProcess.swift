import CIsolation
import Foundation
import Logging
import MediaEngine

/// Limits and placement of the child processes that parse uploads.
public struct IsolationSettings: Sendable, Equatable {
    /// The `moments` executable the children run (`moments job-exec`).
    public var executable: String
    /// Address space of a child (RLIMIT_AS).
    public var memoryBytes: UInt64
    /// Open files of a child (RLIMIT_NOFILE).
    public var openFiles: UInt64 = 64
    /// Largest file a child may write (RLIMIT_FSIZE): results, posters, analysis, cache entries.
    public var fileSizeBytes: UInt64 = 16 << 30
    /// Scheduling niceness of the child.
    public var niceness: Int32

    public init(executable: String, memoryBytes: UInt64, niceness: Int32) {
        self.executable = executable; self.memoryBytes = memoryBytes; self.niceness = niceness
    }

    /// The `moments` binary to run as the child: this process's own executable when it is
    /// `moments`, else a `moments` beside it (the test runner sits next to it in .build/).
    public static func defaultExecutable() -> String { ownExecutable }

    private static let ownExecutable: String = {
        let own = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
        if (own as NSString).lastPathComponent == "moments" { return own }
        return ((own as NSString).deletingLastPathComponent as NSString).appendingPathComponent("moments")
    }()
}

/// What a child may touch on disk besides the system folders: `readable` (read only) and
/// `writable` (read, create, write, remove beneath). Enforced with Landlock where the kernel has it.
public struct ChildAccess: Sendable, Equatable {
    public var readable: [String]
    public var writable: [String]
    public init(readable: [String] = [], writable: [String] = []) { self.readable = readable; self.writable = writable }

    /// Whether this kernel confines children (Landlock ABI ≥ 1).
    public static let isEnforced: Bool = moments_landlock_abi() > 0

    /// Folders of the shared libraries this process has loaded (the child, the same binary, needs
    /// the same ones, wherever the Swift runtime and FFmpeg are installed), read from /proc/self/maps.
    static let libraryFolders: [String] = {
        guard let maps = try? String(contentsOfFile: "/proc/self/maps", encoding: .utf8) else { return [] }
        var folders = Set<String>()
        for line in maps.split(separator: "\n") {
            guard let slash = line.firstIndex(of: "/") else { continue }
            let file = String(line[slash...])
            guard file.hasSuffix(".so") || file.contains(".so.") else { continue }
            folders.insert((file as NSString).deletingLastPathComponent)
        }
        return folders.sorted()
    }()
}

/// How a child ended.
public enum ChildOutcome: Sendable {
    /// It answered (a probe or a highlight result).
    case answered(ChildMessage)
    /// It reported a media error: the input's fault (not a crash).
    case failed(MediaError)
    /// Stopped on request (cancel or shutdown).
    case cancelled
    /// It died or misbehaved: a signal (crash, out of memory, CPU limit), a time budget overrun, an
    /// exit without an answer. `reason` is for the log.
    case abnormal(reason: String, timedOut: Bool)
}

/// Runs one task in a `moments job-exec` child with resource limits, reading its progress and answer
/// from a pipe. Blocking: call it from a thread of its own (EngineThread), never from the
/// cooperative pool. The child dies with that thread (PR_SET_PDEATHSIG), so the caller's thread
/// must outlive the child, which `run` guarantees by waiting for it.
public enum IsolatedChild {
    /// `followUp`, for a recognition that `continues`: called (on this thread) with the child's
    /// recognition answer; the task it returns is the child's next (nil: nothing more). The outcome
    /// is then the follow-up's (its answer, failure or end); the limits hold for both together.
    public static func run(_ task: ChildTask, settings: IsolationSettings, access: ChildAccess, wallSeconds: Double, cpuSeconds: UInt64,
                           cancellation: CancellationToken?, logger: Logger,
                           onProgress: (String, Double) -> Void = { _, _ in },
                           followUp: ((ChildMessage) -> ChildTask?)? = nil) -> ChildOutcome {
        _ = brokenPipesIgnored
        var body: Data
        do { body = try JSONEncoder().encode(task) } catch { return .abnormal(reason: "cannot encode the task: \(error)", timedOut: false) }
        body.append(0x0A)
        var input: [Int32] = [-1, -1], output: [Int32] = [-1, -1], errors: [Int32] = [-1, -1]
        guard moments_pipe(&input) == 0 else { return .abnormal(reason: "pipe: \(String(cString: strerror(errno)))", timedOut: false) }
        guard moments_pipe(&output) == 0 else {
            close(input[0]); close(input[1])
            return .abnormal(reason: "pipe: \(String(cString: strerror(errno)))", timedOut: false)
        }
        guard moments_pipe(&errors) == 0 else {
            for fd in input + output { close(fd) }
            return .abnormal(reason: "pipe: \(String(cString: strerror(errno)))", timedOut: false)
        }
        let limits = moments_child_limits(address_space_bytes: settings.memoryBytes, cpu_seconds: cpuSeconds,
                                          open_files: settings.openFiles, file_size_bytes: settings.fileSizeBytes,
                                          niceness: settings.niceness)
        let argv = [settings.executable, "job-exec"]
        // The child gets no environment of ours (no credentials, no configuration): all it needs is
        // the task, and whether FFmpeg's own warnings are echoed to stderr (then the server's log).
        var env = ["MOMENTS_CHILD=1", "LC_ALL=C"]
        if let echo = ProcessInfo.processInfo.environment["MOMENTS_FFMPEG_LOG"] { env.append("MOMENTS_FFMPEG_LOG=\(echo)") }
        // The `moments` binary itself may always be run (a wrapper set as the executable may exec it).
        var readablePaths = access.readable + ChildAccess.libraryFolders
        let own = IsolationSettings.defaultExecutable()
        if own != settings.executable { readablePaths.append(own) }
        let pid = withCStrings(argv) { cargv in
            withCStrings(env) { cenv in
                withCStrings(readablePaths) { readable in
                    withCStrings(access.writable) { writable in
                        let paths = moments_child_paths(
                            readable: UnsafeRawPointer(readable).assumingMemoryBound(to: UnsafePointer<CChar>?.self),
                            readable_count: Int32(readablePaths.count),
                            writable: UnsafeRawPointer(writable).assumingMemoryBound(to: UnsafePointer<CChar>?.self),
                            writable_count: Int32(access.writable.count))
                        return moments_spawn_child(settings.executable, cargv, cenv, input[0], output[1], errors[1], limits, paths)
                    }
                }
            }
        }
        close(input[0]); close(output[1]); close(errors[1])
        guard pid > 0 else {
            close(input[1]); close(output[0]); close(errors[0])
            return .abnormal(reason: "cannot start \(settings.executable): \(String(cString: strerror(-pid)))", timedOut: false)
        }
        // The task is small (well under a pipe's buffer); the child reads it whole before anything else.
        func send(_ data: Data) -> Bool {
            data.withUnsafeBytes { raw -> Bool in
                var offset = 0
                while offset < raw.count {
                    let n = write(input[1], raw.baseAddress! + offset, raw.count - offset)
                    if n < 0 { if errno == EINTR { continue }; return false }
                    offset += n
                }
                return true
            }
        }
        let wrote = send(body)
        // Without a follow-up the input ends here; with one, once the follow-up is sent.
        var inputOpen = followUp != nil && wrote
        if !inputOpen { close(input[1]) }
        defer { if inputOpen { close(input[1]) } }

        var reader = LineReader()
        var errorTail = Data()
        var answer: ChildMessage?
        var failure: ChildFailure?
        var open = [output[0], errors[0]]
        let started = DispatchTime.now()
        var termSentAt: DispatchTime?
        var timedOut = false, cancelled = false
        var chunk = [UInt8](repeating: 0, count: 64 * 1024)
        let decoder = JSONDecoder()

        while !open.isEmpty {
            let now = DispatchTime.now()
            let elapsed = Double(now.uptimeNanoseconds - started.uptimeNanoseconds) / 1e9
            if !timedOut && elapsed > wallSeconds {
                timedOut = true
                _ = moments_kill_group(pid, SIGKILL)
            }
            if cancellation?.isCancelled == true && termSentAt == nil {
                cancelled = true
                termSentAt = now
                _ = moments_kill_group(pid, SIGTERM)
            }
            if let sent = termSentAt, Double(now.uptimeNanoseconds - sent.uptimeNanoseconds) / 1e9 > 3 {
                _ = moments_kill_group(pid, SIGKILL)
            }
            var fds = open.map { pollfd(fd: $0, events: Int16(POLLIN), revents: 0) }
            let ready = poll(&fds, nfds_t(fds.count), 100)
            if ready < 0 && errno != EINTR { break }
            guard ready > 0 else { continue }
            for entry in fds where entry.revents != 0 {
                let n = chunk.withUnsafeMutableBytes { read(entry.fd, $0.baseAddress, $0.count) }
                if n < 0 && errno == EINTR { continue }
                if n <= 0 {
                    open.removeAll { $0 == entry.fd }
                    continue
                }
                if entry.fd == output[0] {
                    for line in reader.feed(chunk[0..<n]) {
                        guard let message = try? decoder.decode(ChildMessage.self, from: line) else {
                            logger.warning("child wrote an unreadable line", metadata: ["bytes": "\(line.count)"])
                            continue
                        }
                        if let p = message.progress { onProgress(p.stage, p.fraction) }
                        if message.probe != nil || message.result != nil || message.recognition != nil { answer = message }
                        if let f = message.failure { failure = f }
                        if message.recognition != nil, inputOpen, let followUp {
                            // The next task, prepared from the answer (the child waits for it).
                            if let next = followUp(message), var line = try? JSONEncoder().encode(next) {
                                line.append(0x0A)
                                if !send(line) { logger.warning("the child did not take its follow-up task") }
                            }
                            close(input[1])
                            inputOpen = false
                        }
                    }
                    if reader.overflowed {
                        _ = moments_kill_group(pid, SIGKILL)
                        open.removeAll { $0 == entry.fd }
                    }
                } else {
                    errorTail.append(contentsOf: chunk[0..<n])
                    if errorTail.count > 8192 { errorTail.removeFirst(errorTail.count - 8192) }
                }
            }
        }
        close(output[0]); close(errors[0])
        // The pipes are closed when the child exits, but a grandchild could hold them: make sure.
        var status: Int32 = 0
        if moments_wait(pid, &status, 1) == 0 {
            _ = moments_kill_group(pid, SIGKILL)
            _ = moments_wait(pid, &status, 0)
        }
        let stderrText = String(decoding: errorTail, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        if !stderrText.isEmpty { logger.debug("child stderr", metadata: ["text": "\(stderrText.suffix(2000))"]) }

        if cancelled && answer == nil { return .cancelled }
        if moments_exited(status) != 0 {
            let code = moments_exit_code(status)
            if code == 0, let answer { return .answered(answer) }
            if code == ChildExit.mediaError, let failure { return .failed(failure.mediaError(path: task.source)) }
            if code == ChildExit.cancelled { return .cancelled }
            if code == 125 { return .abnormal(reason: "the child could not be confined to its files (Landlock)", timedOut: false) }
            return .abnormal(reason: "the child exited with status \(code) without an answer\(wrote ? "" : " (it did not take the task)")"
                + (stderrText.isEmpty ? "" : ": \(stderrText.suffix(300))"), timedOut: timedOut)
        }
        let signal = moments_signaled(status) != 0 ? moments_term_signal(status) : 0
        let name = signal == SIGKILL ? (timedOut ? "SIGKILL (time budget of \(Int(wallSeconds)) s exceeded)" : "SIGKILL (out of memory or killed)")
            : signal == SIGXCPU ? "SIGXCPU (CPU limit)" : signal == SIGSEGV ? "SIGSEGV (crash)" : signal == SIGABRT ? "SIGABRT (abort)" : "signal \(signal)"
        return .abnormal(reason: "the child died: \(name)" + (stderrText.isEmpty ? "" : ": \(stderrText.suffix(300))"), timedOut: timedOut)
    }

    /// A write to a child that died returns EPIPE instead of killing this process.
    private static let brokenPipesIgnored: Bool = {
        signal(SIGPIPE, SIG_IGN)
        return true
    }()

    private static func withCStrings<R>(_ strings: [String], _ body: (UnsafePointer<UnsafeMutablePointer<CChar>?>) -> R) -> R {
        let pointers = strings.map { strdup($0) } + [nil]
        defer { for p in pointers { free(p) } }
        return pointers.withUnsafeBufferPointer { body($0.baseAddress!) }
    }
}

/// Exit statuses of `moments job-exec` besides 0 (answered).
public enum ChildExit {
    public static let mediaError: Int32 = 3
    public static let badTask: Int32 = 4
    public static let cancelled: Int32 = 5
}

/// Splits a byte stream into lines; a line longer than `maxLine` marks the stream as broken.
struct LineReader {
    var buffer = Data()
    var overflowed = false
    let maxLine = 32 << 20

    mutating func feed(_ bytes: ArraySlice<UInt8>) -> [Data] {
        buffer.append(contentsOf: bytes)
        var lines: [Data] = []
        while let newline = buffer.firstIndex(of: 0x0A) {
            lines.append(buffer[buffer.startIndex..<newline])
            buffer.removeSubrange(buffer.startIndex...newline)
        }
        if buffer.count > maxLine { overflowed = true; buffer.removeAll() }
        return lines
    }
}
