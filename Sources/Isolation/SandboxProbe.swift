import CIsolation
import Foundation
#if canImport(Glibc)
    import Glibc
#endif

/// For the tests of the child's sandbox: `moments job-exec --sandbox-probe REPORT …` enters the
/// same sandbox as a media child (`ChildSide.enterSandbox`, in a process the server started with
/// `IsolatedChild.run`), then tries, as code an attacker got to run through a decoder would, each
/// way out, and writes what worked as JSON to REPORT (in a folder the child may write). The server
/// never passes these arguments; run by hand, the probe only attacks its own sandbox.
public enum SandboxProbe {
    public struct Targets: Sendable {
        public var report: String
        public var serverPID: Int32?
        public var udpPort: UInt16?
        public var abstractSocket: String?
        public var unixSocket: String?
        public var sharedMemoryFile: String?
        /// Files the child must not read (the server's database, a root-only key, /etc/shadow).
        public var readFiles: [String] = []
        /// Processes whose priority, scheduling, CPUs and I/O priority it must not change (the
        /// server, another child).
        public var victims: [Int32] = []
        /// false: the probe is the child's first program, held only by what was set up before exec.
        public var enterSandbox = true
        public init(report: String) { self.report = report }
    }

    /// Each attempt: "allowed" or "blocked: <error>" (plus "limit" figures: "nproc").
    public static func run(_ targets: Targets) -> Int32 {
        if targets.enterSandbox { ChildSide.enterSandbox() }
        var results: [String: String] = [:]
        func outcome(_ ok: Bool) -> String { ok ? "allowed" : "blocked: \(String(cString: strerror(errno)))" }

        if let server = targets.serverPID {
            let fd = open("/proc/\(server)/environ", O_RDONLY | O_CLOEXEC)
            var buffer = [UInt8](repeating: 0, count: 4096)
            let n = fd >= 0 ? read(fd, &buffer, buffer.count) : -1
            results["environ"] = outcome(n > 0)
            if fd >= 0 { close(fd) }
            results["kill"] = outcome(kill(server, 0) == 0)
            results["ptrace"] = outcome(moments_probe_ptrace(server) == 0)
        }
        if let port = targets.udpPort {
            results["udp"] = outcome(moments_probe_udp(port) == 0)
        }
        if let name = targets.abstractSocket {
            results["abstract_socket"] = outcome(moments_probe_unix(name, 1) == 0)
        }
        if let path = targets.unixSocket {
            results["unix_socket"] = outcome(moments_probe_unix(path, 0) == 0)
        }
        if let file = targets.sharedMemoryFile {
            let fd = open(file, O_WRONLY | O_CLOEXEC)
            let wrote = fd >= 0 && write(fd, "x", 1) == 1
            results["shm_write"] = outcome(wrote)
            if fd >= 0 { close(fd) }
        }
        for file in targets.readFiles {
            let rc = moments_probe_read(file)
            results["read:\(file)"] = rc == 0 ? "allowed" : "blocked: \(String(cString: strerror(-rc)))"
        }
        for victim in targets.victims {
            let worked = moments_probe_reschedule(victim)
            results["reschedule:\(victim)"] = worked == 0 ? "blocked" : "allowed (\(worked) of 4)"
        }
        // A thread flood: as many as its limit lets it make (its user is its own: no other child's).
        results["threads"] = "\(moments_probe_threads(1500))"
        if targets.enterSandbox {
            // Processes and programs are the inner filter's (a first program must exec to start).
            // A grandchild in a session of its own that keeps the pipes (it sleeps 900 s); its pid is
            // reported, for the test to see it does not outlive the job.
            let grandchild = moments_probe_setsid_grandchild(900)
            results["fork"] = grandchild > 0 ? "allowed" : "blocked: \(String(cString: strerror(-grandchild)))"
            if grandchild > 0 { results["grandchild"] = "\(grandchild)" }
            // Beyond the limit of processes: forks until one fails (the children exit at once).
            let forks = moments_probe_forks(4096)
            results["forks"] = "\(forks)"
            // EPERM from the filter; without it the kernel looks for the file (ENOENT).
            results["execve"] = moments_probe_execve() == -EPERM ? "blocked: filter" : "allowed"
        }
        let limit = moments_process_limit()
        results["nproc"] = limit == 0 ? "unlimited" : "\(limit)"
        // Threads must still work (FFmpeg decodes with them): one is started (clone with
        // CLONE_THREAD, the filter's one exception) and joined once it has returned.
        var worker = pthread_t()
        let started = pthread_create(&worker, nil, { _ in nil }, nil) == 0
        results["thread"] = started && pthread_join(worker, nil) == 0 ? "allowed" : "blocked"
        results["uid"] = "\(getuid())"
        var capabilities: UInt64 = 0
        results["capabilities"] =
            moments_effective_capabilities(&capabilities) == 0 ? String(capabilities, radix: 16) : "unknown"

        guard let data = try? JSONSerialization.data(withJSONObject: results, options: [.sortedKeys]),
            FileManager.default.createFile(atPath: targets.report, contents: data)
        else {
            FileHandle.standardError.write(Data("sandbox probe: cannot write the report\n".utf8))
            return 1
        }
        FileHandle.standardOutput.write(data + Data("\n".utf8))
        return 0
    }
}
