import FFmpeg
import Foundation
import HighlightJob
import HTTPTypes
import HummingbirdTesting
@testable import Isolation
import Logging
import Testing

/// Code an attacker got to run inside a media child (through a decoder bug) tries every way out:
/// `moments job-exec --sandbox-probe` enters the very sandbox a job's child enters (same start by
/// `IsolatedChild.run`, same `ChildSide.enterSandbox`), then tries each escape and reports. And a
/// child that leaves something holding its pipes does not hold the request or the worker.
@Suite("Hostile clients: the child's sandbox", .serialized, .onceAcrossEngines)
struct HostileChildTests {
    /// What the probe is pointed at: a listening abstract and path Unix socket, a /dev/shm file
    /// anybody may write, and this process (standing for the server).
    final class Targets: @unchecked Sendable {
        let scratch = Scratch()
        let abstractName = "moments-hostile-\(UUID().uuidString)"
        let socketPath: String
        let sharedMemory = "/dev/shm/moments-hostile-\(UUID().uuidString)"
        private var sockets: [Int32] = []

        init() throws {
            socketPath = scratch.path("listening.sock")
            sockets.append(try Self.listen(abstractName, abstract: true))
            sockets.append(try Self.listen(socketPath, abstract: false))
            chmod(socketPath, 0o777)  // the file's permissions are no obstacle: the sandbox must be
            try Data("shared".utf8).write(to: URL(fileURLWithPath: sharedMemory))
            chmod(sharedMemory, 0o666)
        }

        deinit {
            for fd in sockets { close(fd) }
            unlink(sharedMemory)
        }

        var arguments: String {
            "--server-pid \(getpid()) --udp-port 9 --abstract-socket \(abstractName) --unix-socket \(socketPath) --shm-file \(sharedMemory)"
        }

        static func listen(_ name: String, abstract: Bool) throws -> Int32 {
            let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
            guard fd >= 0 else { throw POSIXError(.EIO) }
            var address = sockaddr_un()
            address.sun_family = sa_family_t(AF_UNIX)
            let bytes = Array(name.utf8)
            withUnsafeMutableBytes(of: &address.sun_path) { raw in
                for (i, byte) in bytes.enumerated() { raw[i + (abstract ? 1 : 0)] = byte }
            }
            let length = socklen_t(MemoryLayout<sa_family_t>.size + bytes.count + (abstract ? 1 : 0))
            let bound = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) }
            }
            guard bound == 0, Glibc.listen(fd, 8) == 0 else { close(fd); throw POSIXError(.EADDRINUSE) }
            return fd
        }
    }

    static var quiet: Logger {
        var logger = Logger(label: "test")
        logger.logLevel = .critical
        return logger
    }

    /// A child script that runs the sandbox probe (the real `moments`), reporting to `report`.
    static func probeScript(in scratch: Scratch, report: String, targets: Targets) throws -> String {
        let real = IsolationSettings.defaultExecutable()
        #expect(FileManager.default.isExecutableFile(atPath: real), "build the moments executable first (swift build)")
        let path = scratch.path("probe-child")
        try """
        #!/bin/sh
        exec \(real) job-exec --sandbox-probe \(report) \(targets.arguments)
        """.write(toFile: path, atomically: true, encoding: .utf8)
        chmod(path, 0o755)
        return path
    }

    static func isAlive(_ pid: pid_t) -> Bool {
        // A zombie (not reaped by its new parent yet) is gone for this purpose.
        guard kill(pid, 0) == 0, let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
            let close = stat.lastIndex(of: ")")
        else { return false }
        return !stat[stat.index(after: close)...].hasPrefix(" Z")
    }

    /// Checks a probe's report: every way out blocked, threads still made.
    static func expectContained(_ report: [String: String]) {
        for attempt in [
            "environ", "kill", "ptrace", "udp", "abstract_socket", "unix_socket", "shm_write", "fork", "execve"
        ] {
            #expect(
                report[attempt]?.hasPrefix("blocked") == true,
                "\(attempt): \(report[attempt] ?? "not tried") (\(report))")
        }
        #expect(report["forks"] == "0", "processes made: \(report["forks"] ?? "?")")
        #expect(report["grandchild"] == nil, "\(report)")
        #expect(report["thread"] == "allowed", "threads are what FFmpeg decodes with: \(report)")
        // No capability left, so even a child that kept root cannot read the undumpable server.
        #expect(report["capabilities"] == "0", "\(report)")
        if IsolationLayer.user.unavailable == nil {
            let uid = UInt32(report["uid"] ?? "") ?? 0
            #expect(
                IsolationSettings(executable: "", memoryBytes: 0, niceness: 0).childUsers.contains(uid),
                "a root server's child runs as a user of its own: \(report)")
            #expect(report["nproc"] == "1024", "\(report)")
        }
    }

    static func readReport(_ path: String) -> [String: String]? {
        guard let data = FileManager.default.contents(atPath: path) else { return nil }
        return try? JSONSerialization.jsonObject(with: data) as? [String: String]
    }

    /// The sandbox, from inside: the server's environment, UDP, abstract and path Unix sockets,
    /// signals to the server, tracing it, writing /dev/shm, fork (a `setsid` grandchild, or enough
    /// processes to pass RLIMIT_NPROC) and execve all fail; threads work.
    @Test(.timeLimit(.minutes(3))) func everyWayOutIsBlocked() async throws {
        let dumpable = IsolatedChild.isDumpable
        defer { IsolatedChild.isDumpable = dumpable }
        IsolatedChild.protectServerProcess(logger: Self.quiet)  // as `moments serve` does
        let targets = try Targets()
        let own = targets.scratch.path("job")
        try FileManager.default.createDirectory(atPath: own, withIntermediateDirectories: true)
        let report = own + "/report.json"
        let script = try Self.probeScript(in: targets.scratch, report: report, targets: targets)
        let started = Date()
        let outcome = await MediaChild.run(
            .probe("/nonexistent"), settings: IsolationSettings(executable: script, memoryBytes: 4 << 30, niceness: 0),
            access: ChildAccess(writable: [own]), wallSeconds: 60, cpuSeconds: 60, cancellation: nil, logger: Self.quiet
        )
        let results = try #require(Self.readReport(report), "no report: \(outcome)")
        Self.expectContained(results)
        #expect(Date().timeIntervalSince(started) < 30, "\(outcome)")
        if let pid = results["grandchild"].flatMap({ pid_t($0) }) {
            #expect(!Self.isAlive(pid), "the setsid grandchild outlived its job")
            kill(pid, SIGKILL)
        }
    }

    /// Were a child to start something that keeps its pipes (a grandchild in its own session),
    /// the parent stops reading shortly after the child ends, and the grandchild ends with the job
    /// (its cgroup, where the machine has cgroup v2 for this process).
    @Test(.timeLimit(.minutes(2))) func grandchildHoldingThePipesHoldsNothing() async throws {
        let scratch = Scratch()
        let own = scratch.path("job")
        try FileManager.default.createDirectory(atPath: own, withIntermediateDirectories: true)
        for (ending, budget) in [("exit 9", 60.0), ("exec /bin/sleep 1000", 3.0)] {
            let marker = own + "/grandchild.pid"
            unlink(marker)
            let script = scratch.path("leaves-a-grandchild")
            try """
            #!/bin/sh
            /usr/bin/setsid /bin/sleep 300 &
            echo $! > \(marker)
            \(ending)
            """.write(toFile: script, atomically: true, encoding: .utf8)
            chmod(script, 0o755)
            let started = Date()
            let outcome = await MediaChild.run(
                .probe("/nonexistent"),
                settings: IsolationSettings(executable: script, memoryBytes: 1 << 30, niceness: 0),
                access: ChildAccess(writable: [own]), wallSeconds: budget, cpuSeconds: 60, cancellation: nil,
                logger: Self.quiet)
            let took = Date().timeIntervalSince(started)
            #expect(took < budget.rounded(.up) + 10, "\(ending): \(took) s: \(outcome)")
            guard case .abnormal(let reason, let timedOut) = outcome else {
                Issue.record("\(ending): expected an abnormal end, got \(outcome)")
                continue
            }
            #expect(timedOut == (budget < 10), "\(ending): \(reason)")
            let pid = try #require(
                (try? String(contentsOfFile: marker, encoding: .utf8)).flatMap {
                    pid_t($0.trimmingCharacters(in: .whitespacesAndNewlines))
                })
            if ChildCgroup.parent != nil {
                #expect(!Self.isAlive(pid), "\(ending): the grandchild \(pid) outlived the job")
            }
            kill(pid, SIGKILL)
        }
    }

    /// Over HTTP, at the upload's probe: a child whose grandchild keeps its pipes gets the upload
    /// its answer (422) in seconds, not when the grandchild lets go.
    @Test(.timeLimit(.minutes(3))) func uploadIsAnsweredWhateverHoldsTheProbesPipes() async throws {
        let scratch = Scratch()
        let fake = scratch.path("fake-moments")
        try """
        #!/bin/sh
        /usr/bin/setsid /bin/sleep 300 &
        exit 9
        """.write(toFile: fake, atomically: true, encoding: .utf8)
        chmod(fake, 0o755)
        let server = try await TestServer { s in s.childExecutable = fake }
        let video = try await Fixtures.data(.tiny)
        try await withServer(server, .live) { client in
            let (_, key) = try await client.createAccount()
            let started = Date()
            let refused = try await client.upload(key: key, file: video)
            try refused.expectProblem(.unprocessableContent, code: "unreadable")
            #expect(Date().timeIntervalSince(started) < 20, "\(Date().timeIntervalSince(started)) s")
        }
    }

    /// Over HTTP, a job's child: the attacker's code, run where the highlight would be made,
    /// finds every way out blocked; the job fails and the server goes on.
    @Test(.timeLimit(.minutes(4))) func jobChildCannotReachTheServer() async throws {
        let dumpable = IsolatedChild.isDumpable
        defer { IsolatedChild.isDumpable = dumpable }
        IsolatedChild.protectServerProcess(logger: Self.quiet)  // as `moments serve` does
        let targets = try Targets()
        let fake = targets.scratch.path("fake-moments")
        let server = try await TestServer { s in
            s.childExecutable = fake
            s.retryBackoffSeconds = 0
        }
        let real = IsolationSettings.defaultExecutable()
        let video = try await Fixtures.data(.tiny)
        try await withServer(server, .live) { client in
            let (_, key) = try await client.createAccount()
            // The probe reports into its job's folder (the one place it writes), then waits there a
            // little, for the report to be read before the failed job's folder goes.
            try """
            #!/bin/sh
            input=$(/bin/cat)
            case "$input" in
              *'"kind":"probe"'*)
                # exec: the real child is this very process (its sandbox is made for it)
                exec \(real) job-exec <<EOF
            $input
            EOF
                ;;
            esac
            \(IsolationTests.workspaceOfTask)
            \(real) job-exec --sandbox-probe "$ws/probe.json" \(targets.arguments)
            /bin/sleep 5
            """.write(toFile: fake, atomically: true, encoding: .utf8)
            chmod(fake, 0o755)
            let accepted = try await client.upload(key: key, file: video, fields: [("target_duration", "5")])
            #expect(accepted.status == .ok, "\(accepted.text)")
            let job = try #require(try accepted.json()["job_id"] as? String)
            var written: [String: String]?
            for _ in 0..<1200 where written == nil {
                written = IsolationTests.jobFile("probe.json", job: job, under: server.layout.root).flatMap(
                    Self.readReport)
                if written == nil { try await Task.sleep(for: .milliseconds(50)) }
            }
            let seen = try await client.poll(job: job, key: key, timeout: 120) {
                ["completed", "failed"].contains($0["status"] as? String ?? "")
            }
            #expect(seen.last?["status"] as? String == "failed", "\(seen.last ?? [:])")
            let results = try #require(written, "the probe did not report")
            Self.expectContained(results)
            #expect((try await client.get("/health", key: nil)).status == .ok)
        }
    }

    /// The cgroups a killed server left (its children's, named by its pid) go at the next start;
    /// those of a live server stay.
    /// (Reported as skipped, not passed, where this process may write no cgroup v2.)
    @Test(.enabled(if: ChildCgroup.parent != nil, "no cgroup v2 this process may write"))
    func cgroupsOfADeadServerAreRemoved() throws {
        let parent = try #require(ChildCgroup.parent)
        let gone = Process()
        gone.executableURL = URL(fileURLWithPath: "/bin/true")
        try gone.run()
        gone.waitUntilExit()
        let dead = parent + "/moments-child-\(gone.processIdentifier)-1"
        let live = parent + "/moments-child-\(getppid())-1"
        #expect(mkdir(dead, 0o755) == 0 && mkdir(live, 0o755) == 0)
        defer { rmdir(live); rmdir(dead) }
        ChildCgroup.removeLeftovers(in: parent)
        #expect(!FileManager.default.fileExists(atPath: dead))
        #expect(FileManager.default.fileExists(atPath: live))
    }

    /// A root server's child runs as a user of its own, a uid no other child holds; where that
    /// user cannot reach the program (a folder closed to others, a checkout under /root), the child
    /// is not started at all: no quiet fallback to the server's user.
    @Test(.enabled(if: IsolationLayer.user.unavailable == nil, "not root with CAP_SETUID/CAP_SYS_ADMIN: no user to switch to"))
    func childRunsAsAUserOfItsOwnOrNotAtAll() async throws {
        let scratch = Scratch()
        let closed = scratch.path("closed")
        try FileManager.default.createDirectory(atPath: closed, withIntermediateDirectories: true)
        chmod(closed, 0o700)
        let settings = IsolationSettings(executable: "", memoryBytes: 0, niceness: 0)
        for folder in [scratch.path(""), closed] {
            let script = folder + "/show-user"
            try "#!/bin/sh\necho \"uid=$(/usr/bin/id -u)\" >&2\nexit 9\n".write(
                toFile: script, atomically: true, encoding: .utf8)
            chmod(script, 0o755)
            let outcome = await MediaChild.run(
                .probe("/nonexistent"),
                settings: IsolationSettings(executable: script, memoryBytes: 1 << 30, niceness: 0),
                access: ChildAccess(), wallSeconds: 10, cpuSeconds: 10, cancellation: nil, logger: Self.quiet)
            switch outcome {
            case .abnormal(let reason, _) where folder != closed:
                let uid = reason.components(separatedBy: "uid=").last.flatMap { UInt32($0.prefix { $0.isNumber }) }
                #expect(uid.map(settings.childUsers.contains) == true, "\(reason)")
            case .sandboxUnavailable(let reason) where folder == closed:
                #expect(reason.contains("cannot run"), "\(reason)")
            default:
                Issue.record("\(folder): \(outcome)")
            }
        }
    }

    /// The probe as the child's first program (before `moments` could set anything up itself),
    /// with the storage closed (0700, as the README advises) and open (0755): it cannot read the
    /// server's environment, the database, a root-only key or /etc/shadow, send a datagram,
    /// connect to a Unix socket by path, or renice, reschedule, re-pin or idle the server or
    /// another child; its thread flood stops at its own user's limit (a user no other child has).
    @Test(
        .enabled(if: IsolationLayer.missing(allowing: []).isEmpty, "the sandbox is incomplete on this machine"),
        .timeLimit(.minutes(3)))
    func firstProgramFindsEveryWayOutBlocked() async throws {
        let dumpable = IsolatedChild.isDumpable
        defer { IsolatedChild.isDumpable = dumpable }
        IsolatedChild.protectServerProcess(logger: Self.quiet)
        let real = IsolationSettings.defaultExecutable()
        let key = "/etc/moments-test-key-\(UUID().uuidString)"
        try Data("secret".utf8).write(to: URL(fileURLWithPath: key))
        chmod(key, 0o600)
        defer { unlink(key) }
        for mode in [0o700, 0o755] as [mode_t] {
            let targets = try Targets()
            let storage = targets.scratch.path("Storage")
            let own = storage + "/jobs/probe", other = storage + "/jobs/other"
            for folder in [own, other] {
                try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
            }
            let database = storage + "/moments.sqlite"
            try Data("SQLite format 3".utf8).write(to: URL(fileURLWithPath: database))
            chmod(database, 0o600)
            chmod(storage, mode)
            var settings = IsolationSettings(executable: "", memoryBytes: 1 << 30, niceness: 0)
            settings.viewRoot = storage
            // Another child, asleep: its pid is the second victim.
            let sleeper = targets.scratch.path("sleeper")
            try "#!/bin/sh\necho $$ > \(other)/pid\nexec /bin/sleep 20\n".write(
                toFile: sleeper, atomically: true, encoding: .utf8)
            chmod(sleeper, 0o755)
            settings.executable = sleeper
            let stopSleeper = CancellationToken()
            let sleeping = Task { [settings] in
                await MediaChild.run(
                    .probe("/nonexistent"), settings: settings, access: ChildAccess(writable: [other]),
                    wallSeconds: 30, cpuSeconds: 10, cancellation: stopSleeper, logger: Self.quiet)
            }
            var victim: pid_t?
            for _ in 0..<200 where victim == nil {
                victim = (try? String(contentsOfFile: other + "/pid", encoding: .utf8)).flatMap {
                    pid_t($0.trimmingCharacters(in: .whitespacesAndNewlines))
                }
                if victim == nil { try await Task.sleep(for: .milliseconds(25)) }
            }
            let sleeperPID = try #require(victim, "the second child did not start")
            let report = own + "/report.json"
            let script = targets.scratch.path("probe-first")
            try """
            #!/bin/sh
            exec \(real) job-exec --outer-only --sandbox-probe \(report) \(targets.arguments) \
              --read-file \(database) --read-file \(key) --read-file /etc/shadow --read-file /proc/net/tcp \
              --read-file /proc/\(sleeperPID)/cmdline --read-file /proc/\(getpid())/environ \
              --victim-pid \(getpid()) --victim-pid \(sleeperPID)
            """.write(toFile: script, atomically: true, encoding: .utf8)
            chmod(script, 0o755)
            settings.executable = script
            let niceBefore = getpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0)
            let outcome = await MediaChild.run(
                .probe("/nonexistent"), settings: settings, access: ChildAccess(writable: [own]), wallSeconds: 60,
                cpuSeconds: 60, cancellation: nil, logger: Self.quiet)
            let results = try #require(Self.readReport(report), "mode \(String(mode, radix: 8)): no report: \(outcome)")
            for attempt in ["environ", "kill", "ptrace", "udp", "unix_socket", "abstract_socket", "shm_write"]
                + ["read:\(database)", "read:\(key)", "read:/etc/shadow", "read:/proc/net/tcp"]
                + ["read:/proc/\(sleeperPID)/cmdline", "read:/proc/\(getpid())/environ"]
                + ["reschedule:\(getpid())", "reschedule:\(sleeperPID)"]
            {
                #expect(
                    results[attempt]?.hasPrefix("blocked") == true,
                    "mode \(String(mode, radix: 8)), \(attempt): \(results[attempt] ?? "not tried")")
            }
            #expect(getpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0) == niceBefore)
            #expect(sched_getscheduler(getpid()) == SCHED_OTHER)
            let threads = Int(results["threads"] ?? "") ?? 0
            #expect(threads > 100 && threads < 1024, "threads: \(threads)")
            #expect(results["capabilities"] == "0", "\(results)")
            // The finished folders are the server's again, closed to others.
            var st = stat()
            #expect(stat(own, &st) == 0 && st.st_uid == geteuid() && st.st_mode & 0o777 == 0o700)
            #expect(stat(report, &st) == 0 && st.st_uid == geteuid() && st.st_mode & 0o777 == 0o600)
            stopSleeper.cancel()
            _ = await sleeping.value
        }
    }

    /// The real `moments serve` is not dumpable: a process of its own user without CAP_SYS_PTRACE
    /// (a child of a server that is not root, say) cannot read its environment (the credentials).
    /// Run as root, both drop every capability first (setpriv), as a server that is not root has
    /// none; a capless `sleep` of the same user shows the reading itself works.
    @Test(.timeLimit(.minutes(2))) func serverEnvironmentIsClosedToItsOwnUser() async throws {
        let executable = try #require(ProcessHarness.executable, "build the moments executable first (swift build)")
        let setpriv = "/usr/bin/setpriv"
        let capless = getuid() == 0 ? [setpriv, "--inh-caps=-all", "--bounding-set=-all", "--"] : []
        if getuid() == 0 {
            try #require(
                FileManager.default.isExecutableFile(atPath: setpriv),
                "setpriv (util-linux) is needed to drop root's capabilities")
        }
        func start(_ command: [String], environment: [String: String] = [:]) throws -> Process {
            let process = Process()
            process.executableURL = URL(fileURLWithPath: (capless + command)[0])
            process.arguments = Array((capless + command).dropFirst())
            process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
            process.standardOutput = FileHandle.nullDevice
            process.standardError = FileHandle.nullDevice
            try process.run()
            return process
        }
        func readsEnvironment(of pid: Int32) throws -> Bool {
            let reader = try start(["/bin/cat", "/proc/\(pid)/environ"])
            reader.waitUntilExit()
            return reader.terminationStatus == 0
        }
        let scratch = Scratch()
        let port = try freePort()
        let server = try start(
            [executable, "serve", "--log-level", "warning"],
            environment: [
                "STORAGE_PATH": scratch.path("storage"), "HTTP_PORT": String(port),
                "STORAGE_MIN_FREE_BYTES": "1048576", "MOMENTS_HOSTILE_CANARY": "secret"
            ])
        defer { kill(server.processIdentifier, SIGKILL); server.waitUntilExit() }
        let sleeper = try start(["/bin/sleep", "600"])
        defer { kill(sleeper.processIdentifier, SIGKILL); sleeper.waitUntilExit() }
        try await ProcessHarness.waitUntilUp("http://127.0.0.1:\(port)")
        #expect(
            try readsEnvironment(of: sleeper.processIdentifier),
            "the check itself: a dumpable process's environment is readable")
        #expect(
            try !readsEnvironment(of: server.processIdentifier), "moments serve's environment is closed to its own user"
        )
    }
}
