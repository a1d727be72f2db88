import CIsolation
import Foundation

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
