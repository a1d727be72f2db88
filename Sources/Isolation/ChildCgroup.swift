import CIsolation
import Foundation
import Synchronization

/// A cgroup (v2) of its own for each child. The child moves itself into it before exec, and
/// everything it starts stays in it, even a process in a new session (`setsid`) or an orphan: at
/// the end of the job all of them are killed at once (`cgroup.kill`) and the cgroup removed.
/// Unavailable (nil) without a writable cgroup v2 hierarchy, e.g. a server that is not root
/// without a delegated cgroup: children are then ended by process group, and cannot make
/// processes of their own once their system-call filter is in place.
final class ChildCgroup: @unchecked Sendable {
    let path: String
    /// `cgroup.procs` of the cgroup, open for the child to write itself into (closed by `end`).
    let procsFD: Int32

    private init(path: String, procsFD: Int32) { self.path = path; self.procsFD = procsFD }

    /// The cgroup children's cgroups are made in: this process's own, in the cgroup v2 hierarchy.
    static let parent: String? = {
        guard let mounts = try? String(contentsOfFile: "/proc/self/mountinfo", encoding: .utf8),
            let own = try? String(contentsOfFile: "/proc/self/cgroup", encoding: .utf8)
        else { return nil }
        // "… mount-point options - cgroup2 source …"
        var mountPoint: String?
        for line in mounts.split(separator: "\n") {
            let halves = line.components(separatedBy: " - ")
            guard halves.count == 2, halves[1].hasPrefix("cgroup2 ") else { continue }
            let fields = halves[0].split(separator: " ")
            if fields.count > 4 { mountPoint = String(fields[4]); break }
        }
        guard let mountPoint,
            let line = own.split(separator: "\n").first(where: { $0.hasPrefix("0::") })
        else { return nil }
        let relative = String(line.dropFirst(3))
        let parent = relative == "/" ? mountPoint : mountPoint + relative
        // Usable only if a cgroup can be made and removed there.
        let probe = parent + "/moments-probe-\(getpid())"
        guard mkdir(probe, 0o755) == 0 || errno == EEXIST else { return nil }
        let usable = FileManager.default.fileExists(atPath: probe + "/cgroup.procs")
        rmdir(probe)
        guard usable else { return nil }
        removeLeftovers(in: parent)
        return parent
    }()

    /// The cgroups a server that died (kill -9, power loss) left: whatever still runs in them is
    /// killed and they are removed. Those of a live server (its pid in the name) are left alone.
    static func removeLeftovers(in parent: String) {
        for name in (try? FileManager.default.contentsOfDirectory(atPath: parent)) ?? []
        where name.hasPrefix("moments-child-") {
            let fields = name.split(separator: "-")
            guard fields.count == 4, let owner = pid_t(fields[2]), owner != getpid(), kill(owner, 0) != 0,
                errno == ESRCH
            else { continue }
            let path = parent + "/" + name
            let killFD = moments_open_write(path + "/cgroup.kill")
            if killFD >= 0 { _ = moments_write_text(killFD, "1"); close(killFD) }
            for _ in 0..<100 {
                if rmdir(path) == 0 || errno == ENOENT { break }
                usleep(10_000)
            }
        }
    }

    private static let counter = Atomic<Int>(0)

    /// A new cgroup for one child, or nil (no cgroup v2 this process may write). Where the
    /// hierarchy gives it the controllers, its processes and threads (`pids.max`) and memory
    /// (`memory.max`) are capped too; elsewhere the child's rlimits (RLIMIT_NPROC of its own user,
    /// RLIMIT_AS) hold those.
    static func make(processes: UInt64 = 0, memoryBytes: UInt64 = 0) -> ChildCgroup? {
        guard let parent else { return nil }
        let path = parent + "/moments-child-\(getpid())-\(counter.add(1, ordering: .relaxed).newValue)"
        guard mkdir(path, 0o755) == 0 else { return nil }
        for (file, value) in [("pids.max", processes), ("memory.max", memoryBytes)] where value > 0 {
            let fd = moments_open_write(path + "/" + file)
            guard fd >= 0 else { continue }  // no such controller here
            let rc = moments_write_text(fd, "\(value)")
            close(fd)
            if rc != 0 { rmdir(path); return nil }
        }
        let fd = moments_open_write(path + "/cgroup.procs")
        guard fd >= 0 else { rmdir(path); return nil }
        return ChildCgroup(path: path, procsFD: fd)
    }

    /// The pids in the cgroup.
    var members: [pid_t] {
        guard let text = try? String(contentsOfFile: path + "/cgroup.procs", encoding: .utf8) else { return [] }
        return text.split(separator: "\n").compactMap { pid_t($0) }
    }

    /// Kills whatever is left in the cgroup and removes it (waits up to about 2 s for the kills to
    /// take effect). Blocking: call it from the child's own thread.
    func end() {
        close(procsFD)
        let killFD = moments_open_write(path + "/cgroup.kill")
        defer { if killFD >= 0 { close(killFD) } }
        for _ in 0..<400 {
            if killFD >= 0 {
                _ = moments_write_text(killFD, "1")
            } else {
                // Kernels before 5.14: one at a time (the cgroup's members are all the job's).
                for pid in members { kill(pid, SIGKILL) }
            }
            if rmdir(path) == 0 || errno == ENOENT { return }
            usleep(5_000)
        }
    }
}
