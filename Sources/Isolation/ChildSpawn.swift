import CIsolation
import Foundation
import Logging
import NIOPosix
import Synchronization

/// A child just started: its pid, the parent's ends of its three pipes and its cgroup.
struct SpawnedChild: Sendable {
    var pid: pid_t
    var stdin: Int32
    var stdout: Int32
    var stderr: Int32
    var cgroup: ChildCgroup?
}

/// Starting a `moments job-exec` child: the user it runs as, its folders, its cgroup, and the
/// fork itself (in C, `moments_spawn_child`, with its limits applied before exec).
extension IsolatedChild {
    /// Starts the child on a thread of NIO's blocking pool: the fork and the folder hand-over block,
    /// and the child is sent SIGKILL when the thread that forked it ends (PR_SET_PDEATHSIG), so
    /// that thread must live as long as this process, which the pool's threads do (a thread of
    /// Swift's cooperative pool may be retired while it is idle). The error is a reason for the log.
    static func spawn(
        settings: IsolationSettings, access: ChildAccess, cpuSeconds: UInt64, logger: Logger
    ) async -> Result<SpawnedChild, SpawnFailure> {
        _ = brokenPipesIgnored
        do {
            return try await NIOThreadPool.singleton.runIfActive {
                spawnBlocking(settings: settings, access: access, cpuSeconds: cpuSeconds, logger: logger)
            }
        } catch {
            return .failure(SpawnFailure(reason: "cannot start a child: \(error)"))
        }
    }

    struct SpawnFailure: Error {
        var reason: String
    }

    private static func spawnBlocking(
        settings: IsolationSettings, access: ChildAccess, cpuSeconds: UInt64, logger: Logger
    ) -> Result<SpawnedChild, SpawnFailure> {
        var input: [Int32] = [-1, -1], output: [Int32] = [-1, -1], errors: [Int32] = [-1, -1]
        let pipeFailure = { SpawnFailure(reason: "pipe: \(String(cString: strerror(errno)))") }
        guard moments_pipe(&input) == 0 else { return .failure(pipeFailure()) }
        guard moments_pipe(&output) == 0 else {
            let failure = pipeFailure()
            close(input[0]); close(input[1])
            return .failure(failure)
        }
        guard moments_pipe(&errors) == 0 else {
            let failure = pipeFailure()
            for fd in input + output { close(fd) }
            return .failure(failure)
        }
        let user = childUser(settings: settings, access: access, logger: logger)
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
        let pid = exec(settings: settings, access: access, fds: (input[0], output[1], errors[1]), limits: limits)
        close(input[0]); close(output[1]); close(errors[1])
        guard pid > 0 else {
            close(input[1]); close(output[0]); close(errors[0])
            cgroup?.end()
            return .failure(
                SpawnFailure(reason: "cannot start \(settings.executable): \(String(cString: strerror(-pid)))"))
        }
        return .success(SpawnedChild(pid: pid, stdin: input[1], stdout: output[0], stderr: errors[0], cgroup: cgroup))
    }

    /// The child's own user, or nil (this process's) where that user could not run it. The
    /// folders it writes become its own (its files are created there by the server); what it only
    /// reads must be readable by others (the server's umask 022).
    private static func childUser(settings: IsolationSettings, access: ChildAccess, logger: Logger) -> ChildUser? {
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
        return user
    }

    /// Forks and execs `moments job-exec` with the pipes' child ends as its standard descriptors.
    private static func exec(
        settings: IsolationSettings, access: ChildAccess, fds: (Int32, Int32, Int32), limits: moments_child_limits
    ) -> pid_t {
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
        return withCStrings(argv) { cargv in
            withCStrings(env) { cenv in
                withCStrings(readablePaths) { readable in
                    withCStrings(access.writable) { writable in
                        let paths = moments_child_paths(
                            readable: UnsafeRawPointer(readable).assumingMemoryBound(to: UnsafePointer<CChar>?.self),
                            readable_count: Int32(readablePaths.count),
                            writable: UnsafeRawPointer(writable).assumingMemoryBound(to: UnsafePointer<CChar>?.self),
                            writable_count: Int32(access.writable.count))
                        return moments_spawn_child(
                            settings.executable, cargv, cenv, fds.0, fds.1, fds.2, limits, paths)
                    }
                }
            }
        }
    }

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
