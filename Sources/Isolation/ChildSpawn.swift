import CIsolation
import Foundation
import Logging
import NIOPosix
import Synchronization

/// A child just started: its pid, the parent's ends of its three pipes, its cgroup, and its user
/// with the folders handed to it (taken back when it has ended).
struct SpawnedChild: Sendable {
    var pid: pid_t
    var stdin: Int32
    var stdout: Int32
    var stderr: Int32
    var cgroup: ChildCgroup?
    var claim: ChildUserSlots.Claim?
    var handedOver: [String] = []
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
        } catch is CancellationError {
            // Cancelled while the start waited for a thread: nothing was started.
            return .failure(SpawnFailure(reason: "cancelled before it started", cancelled: true))
        } catch {
            return .failure(SpawnFailure(reason: "cannot start a child: \(error)"))
        }
    }

    struct SpawnFailure: Error {
        var reason: String
        /// A layer of the sandbox could not be set up: the operator's to fix, not the input's.
        var sandbox = false
        /// The task waiting for the child was cancelled before the child was started.
        var cancelled = false
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
        func fail(_ reason: String, sandbox: Bool) -> Result<SpawnedChild, SpawnFailure> {
            for fd in input + output + errors { close(fd) }
            return .failure(SpawnFailure(reason: reason, sandbox: sandbox))
        }
        if let problem = IsolationLayer.problem(allowing: settings.allowWeaker) { return fail(problem, sandbox: true) }
        let claim: ChildUserSlots.Claim?
        switch childUser(settings: settings, access: access) {
        case .success(let held): claim = held
        case .failure(let failure): return fail(failure.reason, sandbox: true)
        }
        func release() {
            if let claim {
                takeBack(access.writable)
                ChildUserSlots.shared.release(claim)
            }
        }
        let cgroup = ChildCgroup.make(processes: settings.processes, memoryBytes: settings.memoryBytes)
        if cgroup == nil && !settings.allowWeaker.contains(.cgroup) {
            release()
            return fail("cannot make the child's cgroup", sandbox: true)
        }
        var limits = moments_child_limits(
            address_space_bytes: settings.memoryBytes, cpu_seconds: cpuSeconds,
            open_files: settings.openFiles, file_size_bytes: settings.fileSizeBytes,
            niceness: settings.niceness, processes: 0, uid: -1, gid: -1,
            cgroup_procs_fd: cgroup?.procsFD ?? -1, require_landlock: settings.allowWeaker.contains(.landlock) ? 0 : 1)
        if let user = claim?.user {
            limits.uid = Int32(bitPattern: user.uid)
            limits.gid = Int32(bitPattern: user.gid)
            // The child's user is its alone: the limit counts its own threads only.
            limits.processes = settings.processes
        }
        let view = claim == nil ? nil : settings.viewRoot
        let pid = exec(
            settings: settings, access: access, view: view, fds: (input[0], output[1], errors[1]), limits: limits)
        close(input[0]); close(output[1]); close(errors[1])
        guard pid > 0 else {
            close(input[1]); close(output[0]); close(errors[0])
            cgroup?.end()
            release()
            return .failure(
                SpawnFailure(reason: "cannot start \(settings.executable): \(String(cString: strerror(-pid)))"))
        }
        return .success(
            SpawnedChild(
                pid: pid, stdin: input[1], stdout: output[0], stderr: errors[0], cgroup: cgroup, claim: claim,
                handedOver: claim == nil ? [] : access.writable))
    }

    /// A user of its own for the child (nil where the `user` layer is allowed weaker and missing),
    /// with its writable folders handed to it; or why there is none. The child must be able to run
    /// the executable and load its libraries as that user; its storage paths it reaches through
    /// its view of the storage (`IsolationSettings.viewRoot`), or, without one, by their modes.
    private static func childUser(settings: IsolationSettings, access: ChildAccess)
        -> Result<ChildUserSlots.Claim?, ChildUserSlots.ClaimFailure>
    {
        if IsolationLayer.user.unavailable != nil { return .success(nil) }  // allowed weaker: checked before
        let claim: ChildUserSlots.Claim
        switch ChildUserSlots.shared.claim(in: settings.childUsers) {
        case .success(let held): claim = held
        case .failure(let failure): return .failure(failure)
        }
        let user = claim.user
        func refuse(_ reason: String) -> Result<ChildUserSlots.Claim?, ChildUserSlots.ClaimFailure> {
            ChildUserSlots.shared.release(claim)
            return .failure(ChildUserSlots.ClaimFailure(reason: reason))
        }
        if !user.canRun(settings.executable) {
            return refuse(
                "a child's user (uid \(user.uid)) cannot run \(settings.executable): install moments where every user may run it (every folder on the way 0755)"
            )
        }
        if let closed = ChildAccess.libraryFolders.first(where: { !user.canReach($0, 0o1) }) {
            return refuse("a child's user (uid \(user.uid)) cannot reach the libraries in \(closed)")
        }
        if let root = settings.viewRoot, !user.canReach((root as NSString).deletingLastPathComponent, 0o1) {
            // Its view is mounted at the storage's own path: the folders above it must be searchable.
            return refuse(
                "a child's user (uid \(user.uid)) cannot reach the folder above the storage (\((root as NSString).deletingLastPathComponent)): make the folders above it searchable by others (0711 or 0755; the storage itself may stay 0700)"
            )
        }
        if settings.viewRoot == nil,
            let closed = access.readable.first(where: { !user.canReach($0, 0o4) })
                ?? access.writable.first(where: { !user.canReach(($0 as NSString).deletingLastPathComponent, 0o1) })
        {
            return refuse("a child's user (uid \(user.uid)) cannot reach \(closed)")
        }
        for folder in access.writable {
            let rc = moments_hand_over(folder, Int32(bitPattern: user.uid), Int32(bitPattern: user.gid), 0)
            if rc != 0 {
                takeBack(access.writable)
                return refuse("cannot give a child's folder to its user: \(String(cString: strerror(-rc)))")
            }
        }
        return .success(claim)
    }

    /// The folders a child wrote in, back to this process's user: folders 0700, files 0600 (a
    /// local reader, or the next child of that uid, reads nothing of them).
    static func takeBack(_ folders: [String]) {
        for folder in folders { _ = moments_hand_over(folder, Int32(bitPattern: geteuid()), Int32(bitPattern: getegid()), 1) }
    }

    /// Forks and execs `moments job-exec` with the pipes' child ends as its standard descriptors.
    private static func exec(
        settings: IsolationSettings, access: ChildAccess, view: String?, fds: (Int32, Int32, Int32),
        limits: moments_child_limits
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
        if isScript(settings.executable) {
            // A wrapper script (jobs.executable, the tests' stand-ins): its shell and the commands
            // it runs, which are no secret (the system's programs, not its configuration).
            readablePaths += ["/bin", "/usr/bin"]
        }
        return withCStrings(argv) { cargv in
            withCStrings(env) { cenv in
                withCStrings(readablePaths) { readable in
                    withCStrings(access.writable) { writable in
                        let spawn = { (root: UnsafePointer<CChar>?) -> pid_t in
                            let paths = moments_child_paths(
                                readable: UnsafeRawPointer(readable).assumingMemoryBound(
                                    to: UnsafePointer<CChar>?.self),
                                readable_count: Int32(readablePaths.count),
                                writable: UnsafeRawPointer(writable).assumingMemoryBound(
                                    to: UnsafePointer<CChar>?.self),
                                writable_count: Int32(access.writable.count), view_root: root)
                            return moments_spawn_child(
                                settings.executable, cargv, cenv, fds.0, fds.1, fds.2, limits, paths)
                        }
                        guard let view else { return spawn(nil) }
                        return view.withCString { spawn($0) }
                    }
                }
            }
        }
    }

    /// Whether `path` starts with "#!".
    private static func isScript(_ path: String) -> Bool {
        guard let handle = FileHandle(forReadingAtPath: path) else { return false }
        defer { try? handle.close() }
        return (try? handle.read(upToCount: 2)) == Data("#!".utf8)
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
