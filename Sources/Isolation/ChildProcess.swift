import CIsolation
import Foundation
import Logging
import MediaEngine
import Synchronization

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
    /// The unprivileged user the child runs as when this process is root (nobody); nil: this
    /// process's user (a server that is not root cannot change it; its children are held by their
    /// system-call filter and Landlock instead).
    public var user: ChildUser? = ChildUser.default
    /// Processes and threads of the child's user (RLIMIT_NPROC), set when the child runs as `user`
    /// (for a child of the server's own user the limit would count the server's threads too).
    public var processes: UInt64 = 1024

    public init(executable: String, memoryBytes: UInt64, niceness: Int32) {
        self.executable = executable; self.memoryBytes = memoryBytes; self.niceness = niceness
    }

    /// The `moments` binary to run as the child: this process's own executable when it is
    /// `moments`, else a `moments` beside it (the test runner sits next to it in .build/).
    public static func defaultExecutable() -> String { ownExecutable }

    private static let ownExecutable: String = {
        let own =
            (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
        if (own as NSString).lastPathComponent == "moments" { return own }
        return ((own as NSString).deletingLastPathComponent as NSString).appendingPathComponent("moments")
    }()
}

/// The user a child runs as, instead of root.
public struct ChildUser: Sendable, Equatable {
    public var uid: UInt32
    public var gid: UInt32
    public init(uid: UInt32, gid: UInt32) { self.uid = uid; self.gid = gid }

    /// `nobody` (65534 where the system has no such user) when this process is root with the
    /// capabilities to give folders away and change user (CAP_CHOWN, CAP_SETGID, CAP_SETUID), else nil.
    public static let `default`: ChildUser? = {
        guard geteuid() == 0, canChangeUser else { return nil }
        guard let entry = getpwnam("nobody") else { return ChildUser(uid: 65534, gid: 65534) }
        return ChildUser(uid: entry.pointee.pw_uid, gid: entry.pointee.pw_gid)
    }()

    /// CAP_CHOWN (0), CAP_SETGID (6) and CAP_SETUID (7) in this process's effective set.
    static var canChangeUser: Bool {
        guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8),
            let line = status.split(separator: "\n").first(where: { $0.hasPrefix("CapEff:") }),
            let effective = UInt64(line.dropFirst("CapEff:".count).trimmingCharacters(in: .whitespaces), radix: 16)
        else { return false }
        let needed: UInt64 = 1 << 0 | 1 << 6 | 1 << 7
        return effective & needed == needed
    }

    /// Whether this user may run `path`: every folder on the way searchable, the file readable and
    /// executable (a checkout under /root is not, for nobody).
    public func canRun(_ path: String) -> Bool { canReach(path, 0o5) }

    /// Whether this user may search every folder on the way to `path`, and use `path` itself with
    /// the permission `bits` (4 read, 2 write, 1 execute or search).
    public func canReach(_ path: String, _ bits: mode_t) -> Bool {
        func allows(_ st: stat, _ bits: mode_t) -> Bool {
            let mode = st.st_mode
            if st.st_uid == uid { return mode & (bits << 6) == bits << 6 }
            if st.st_gid == gid { return mode & (bits << 3) == bits << 3 }
            return mode & bits == bits
        }
        var st = stat()
        var folder = (path as NSString).deletingLastPathComponent
        while !folder.isEmpty {
            guard stat(folder, &st) == 0, allows(st, 0o1) else { return false }
            if folder == "/" { break }
            folder = (folder as NSString).deletingLastPathComponent
        }
        return stat(path, &st) == 0 && allows(st, bits)
    }
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
    public static func run(
        _ task: ChildTask, settings: IsolationSettings, access: ChildAccess, wallSeconds: Double, cpuSeconds: UInt64,
        cancellation: CancellationToken?, logger: Logger,
        onProgress: (String, Double) -> Void = { _, _ in },
        followUp: ((ChildMessage) -> ChildTask?)? = nil
    ) -> ChildOutcome {
        _ = brokenPipesIgnored
        var body: Data
        do { body = try JSONEncoder().encode(task) } catch {
            return .abnormal(reason: "cannot encode the task: \(error)", timedOut: false)
        }
        body.append(0x0A)
        var input: [Int32] = [-1, -1], output: [Int32] = [-1, -1], errors: [Int32] = [-1, -1]
        guard moments_pipe(&input) == 0 else {
            return .abnormal(reason: "pipe: \(String(cString: strerror(errno)))", timedOut: false)
        }
        guard moments_pipe(&output) == 0 else {
            close(input[0]); close(input[1])
            return .abnormal(reason: "pipe: \(String(cString: strerror(errno)))", timedOut: false)
        }
        guard moments_pipe(&errors) == 0 else {
            for fd in input + output { close(fd) }
            return .abnormal(reason: "pipe: \(String(cString: strerror(errno)))", timedOut: false)
        }
        // The child's own user: the folders it writes become its own (its files are created there
        // by the server); what it only reads must be readable by others (the server's umask 022).
        var user = settings.user
        if user == nil && geteuid() == 0 {
            warnOnce(
                logger,
                "running as root without the capabilities to change user: children run as root (held by their filter, Landlock and cgroup)"
            )
        }
        if let child = user,
            !child.canRun(settings.executable) || !ChildAccess.libraryFolders.allSatisfy({ child.canReach($0, 0o1) })
        {
            warnOnce(
                logger,
                "the child's user (uid \(child.uid)) cannot run \(settings.executable) or load its libraries: children run as this process's user"
            )
            user = nil
        }
        if let child = user,
            let closed = access.readable.first(where: { !child.canReach($0, 0o4) })
                ?? access.writable.first(where: { !child.canReach(($0 as NSString).deletingLastPathComponent, 0o1) })
        {
            // A storage folder closed to others (mode 0700, say): this child keeps the server's user.
            warnOnce(
                logger,
                "the child's user (uid \(child.uid)) cannot reach \(closed): children that need it run as this process's user"
            )
            user = nil
        }
        if let user {
            for folder in access.writable {
                let rc = moments_hand_over(folder, Int32(bitPattern: user.uid), Int32(bitPattern: user.gid))
                if rc != 0 {
                    logger.warning(
                        "cannot give a child's folder to its user",
                        metadata: ["error": "\(String(cString: strerror(-rc)))"])
                }
            }
        }
        let cgroup = ChildCgroup.make()
        if cgroup == nil {
            warnOnce(
                logger,
                "no cgroup v2 this process can write: a child's processes are ended by process group only (the system-call filter keeps a media child from starting any)"
            )
        }
        var limits = moments_child_limits(
            address_space_bytes: settings.memoryBytes, cpu_seconds: cpuSeconds,
            open_files: settings.openFiles, file_size_bytes: settings.fileSizeBytes,
            niceness: settings.niceness, processes: 0, uid: -1, gid: -1,
            cgroup_procs_fd: cgroup?.procsFD ?? -1)
        if let user {
            limits.uid = Int32(bitPattern: user.uid)
            limits.gid = Int32(bitPattern: user.gid)
            limits.processes = settings.processes
        }
        // Whatever happens below, nothing the child started outlives this call.
        defer { cgroup?.end() }
        let argv = [settings.executable, "job-exec"]
        // The child gets no environment of ours (no credentials, no configuration): all it needs is
        // the task, and whether FFmpeg's own warnings are echoed to stderr (then the server's log).
        var env = ["MOMENTS_CHILD=1", "LC_ALL=C"]
        if let echo = ProcessInfo.processInfo.environment["MOMENTS_FFMPEG_LOG"] {
            env.append("MOMENTS_FFMPEG_LOG=\(echo)")
        }
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
                        return moments_spawn_child(
                            settings.executable, cargv, cenv, input[0], output[1], errors[1], limits, paths)
                    }
                }
            }
        }
        close(input[0]); close(output[1]); close(errors[1])
        guard pid > 0 else {
            close(input[1]); close(output[0]); close(errors[0])
            return .abnormal(
                reason: "cannot start \(settings.executable): \(String(cString: strerror(-pid)))", timedOut: false)
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

        // Reading stops when both pipes end, or shortly after the child ended or was killed, whoever
        // else holds the pipes (something the child started): the deadline holds whatever it does.
        var endedAt: DispatchTime?
        while !open.isEmpty {
            let now = DispatchTime.now()
            let elapsed = Double(now.uptimeNanoseconds - started.uptimeNanoseconds) / 1e9
            if !timedOut && elapsed > wallSeconds {
                timedOut = true
                _ = moments_kill_group(pid, SIGKILL)
                endedAt = endedAt ?? now
            }
            if cancellation?.isCancelled == true && termSentAt == nil {
                cancelled = true
                termSentAt = now
                _ = moments_kill_group(pid, SIGTERM)
            }
            if let sent = termSentAt, Double(now.uptimeNanoseconds - sent.uptimeNanoseconds) / 1e9 > 3 {
                _ = moments_kill_group(pid, SIGKILL)
                endedAt = endedAt ?? now
            }
            if endedAt == nil, moments_has_exited(pid) == 1 { endedAt = now }
            if let ended = endedAt, Double(now.uptimeNanoseconds - ended.uptimeNanoseconds) / 1e9 > Self.drainSeconds {
                if !open.isEmpty {
                    logger.warning("stopped reading a child's pipes: something it started still holds them")
                }
                break
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
                        if message.probe != nil || message.result != nil || message.recognition != nil {
                            answer = message
                        }
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
                        endedAt = endedAt ?? DispatchTime.now()
                    }
                } else {
                    errorTail.append(contentsOf: chunk[0..<n])
                    if errorTail.count > 8192 { errorTail.removeFirst(errorTail.count - 8192) }
                }
            }
        }
        close(output[0]); close(errors[0])
        // The child's process group goes with it (the child itself is not reaped yet, so its pid
        // and group id are still its own), then the rest of its cgroup (the deferred end).
        var status: Int32 = 0
        _ = moments_kill_group(pid, SIGKILL)
        _ = moments_wait(pid, &status, 0)
        let stderrText = String(decoding: errorTail, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        if !stderrText.isEmpty { logger.debug("child stderr", metadata: ["text": "\(stderrText.suffix(2000))"]) }

        if cancelled && answer == nil { return .cancelled }
        if moments_exited(status) != 0 {
            let code = moments_exit_code(status)
            if code == 0, let answer { return .answered(answer) }
            if code == ChildExit.mediaError, let failure { return .failed(failure.mediaError(path: task.source)) }
            if code == ChildExit.cancelled { return .cancelled }
            if code == 125 {
                return .abnormal(reason: "the child could not be confined to its files (Landlock)", timedOut: false)
            }
            if code == 123 {
                return .abnormal(reason: "the child could not switch to its unprivileged user", timedOut: false)
            }
            if code == 124 { return .abnormal(reason: "the child could not join its cgroup", timedOut: false) }
            return .abnormal(
                reason:
                    "the child exited with status \(code) without an answer\(wrote ? "" : " (it did not take the task)")"
                    + (stderrText.isEmpty ? "" : ": \(stderrText.suffix(300))"), timedOut: timedOut)
        }
        let signal = moments_signaled(status) != 0 ? moments_term_signal(status) : 0
        let name =
            signal == SIGKILL
            ? (timedOut
                ? "SIGKILL (time budget of \(Int(wallSeconds)) s exceeded)" : "SIGKILL (out of memory or killed)")
            : signal == SIGXCPU
                ? "SIGXCPU (CPU limit)"
                : signal == SIGSEGV ? "SIGSEGV (crash)" : signal == SIGABRT ? "SIGABRT (abort)" : "signal \(signal)"
        return .abnormal(
            reason: "the child died: \(name)" + (stderrText.isEmpty ? "" : ": \(stderrText.suffix(300))"),
            timedOut: timedOut)
    }

    /// For the server and worker processes, at startup: not dumpable (PR_SET_DUMPABLE 0), so no
    /// process of the same user without CAP_SYS_PTRACE (a child of a server that is not root, say)
    /// reads this process's environment (its credentials) or memory from /proc, and no core dump
    /// writes them to disk. A failure is logged, not fatal.
    public static func protectServerProcess(logger: Logger) {
        let rc = moments_set_dumpable(0)
        if rc != 0 {
            logger.warning(
                "cannot make this process undumpable", metadata: ["error": "\(String(cString: strerror(-rc)))"])
        }
    }

    /// Whether this process is dumpable (its /proc files open to processes of its user); settable
    /// for tests.
    public static var isDumpable: Bool {
        get { moments_is_dumpable() != 0 }
        set { _ = moments_set_dumpable(newValue ? 1 : 0) }
    }

    /// How long the pipes are still read once the child has ended or was killed.
    static let drainSeconds = 1.0

    private static let warned = Mutex(Set<String>())

    /// Logs `message` the first time only (a missing mechanism is said once, not per child).
    private static func warnOnce(_ logger: Logger, _ message: String) {
        let first = warned.withLock { $0.insert(message).inserted }
        if first { logger.warning("\(message)") }
    }

    /// A write to a child that died returns EPIPE instead of killing this process.
    private static let brokenPipesIgnored: Bool = {
        signal(SIGPIPE, SIG_IGN)
        return true
    }()

    private static func withCStrings<R>(_ strings: [String], _ body: (UnsafePointer<UnsafeMutablePointer<CChar>?>) -> R)
        -> R
    {
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

/// Splits a byte stream into lines; a line longer than `maxLine` marks the stream as broken. Each
/// byte is looked at once, whatever the lengths of the lines: only the new bytes are searched for a
/// newline, and a partial line is checked against the limit before it is kept.
struct LineReader {
    /// The start of a line whose newline has not come yet.
    var buffer = Data()
    var overflowed = false
    let maxLine: Int

    init(maxLine: Int = 32 << 20) { self.maxLine = maxLine }

    mutating func feed(_ bytes: ArraySlice<UInt8>) -> [Data] {
        guard !overflowed else { return [] }
        return bytes.withUnsafeBufferPointer { chunk -> [Data] in
            guard let base = chunk.baseAddress else { return [] }
            var lines: [Data] = []
            var start = 0
            while start < chunk.count, let found = memchr(base + start, 0x0A, chunk.count - start) {
                let newline = base.distance(to: found.assumingMemoryBound(to: UInt8.self))
                let part = UnsafeBufferPointer(rebasing: chunk[start..<newline])
                guard buffer.count + part.count <= maxLine else { return overflow(lines) }
                if buffer.isEmpty {
                    lines.append(Data(buffer: part))
                } else {
                    buffer.append(part)
                    lines.append(buffer)
                    buffer = Data()
                }
                start = newline + 1
            }
            let rest = UnsafeBufferPointer(rebasing: chunk[start...])
            guard buffer.count + rest.count <= maxLine else { return overflow(lines) }
            buffer.append(rest)
            return lines
        }
    }

    private mutating func overflow(_ lines: [Data]) -> [Data] {
        overflowed = true
        buffer = Data()
        return lines
    }
}
