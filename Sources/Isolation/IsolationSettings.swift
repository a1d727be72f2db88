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
    /// The users children run as: each child takes a uid of this range no other child holds
    /// (claimed across this host's processes, `ChildUserSlots`), its group the same number. No
    /// account needs to exist for them. Each child is then alone with its user: its thread limit
    /// (RLIMIT_NPROC) is its own, and it cannot signal, renice or read another child or the server.
    public var childUsers: ClosedRange<UInt32> = 59000...59255
    /// Layers a child may start without (development machines; see `IsolationLayer`). Empty: a
    /// child whose sandbox is not complete is not started, and its job fails with an operator error.
    public var allowWeaker: Set<IsolationLayer> = []
    /// The storage folder the child sees only its own paths of (`moments_child_paths.view_root`);
    /// nil: the child sees the filesystem as it is (its user must reach its paths, Landlock holds it).
    public var viewRoot: String?
    /// Processes and threads of a child (RLIMIT_NPROC of its own user).
    public var processes: UInt64 = 1024

    public init(executable: String, memoryBytes: UInt64, niceness: Int32) {
        self.executable = executable; self.memoryBytes = memoryBytes; self.niceness = niceness
    }

    /// "FIRST-LAST" as a range of uids above the system's (1000 and up), at most 65536 of them.
    public static func userRange(_ text: String) -> ClosedRange<UInt32>? {
        let parts = text.split(separator: "-", omittingEmptySubsequences: false)
        guard parts.count == 2, let first = UInt32(parts[0].trimmingCharacters(in: .whitespaces)),
            let last = UInt32(parts[1].trimmingCharacters(in: .whitespaces)), first >= 1000, last >= first,
            last - first < 65536, last < UInt32.max
        else { return nil }
        return first...last
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

/// The user a child runs as.
public struct ChildUser: Sendable, Equatable {
    public var uid: UInt32
    public var gid: UInt32
    public init(uid: UInt32, gid: UInt32) { self.uid = uid; self.gid = gid }

    /// Whether this user may run `path`: every folder on the way searchable, the file readable and
    /// executable (a checkout under /root is not, for another user).
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
    /// A library only the child loads (the face detector's) comes in the caller's `readable`.
    static let libraryFolders: [String] = {
        var folders: Set<String> = []
        // Read to its end: /proc files have no size, and a read by the file's size stops early.
        let fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return [] }
        defer { close(fd) }
        var bytes: [UInt8] = [], chunk = [UInt8](repeating: 0, count: 65536)
        while true {
            let n = read(fd, &chunk, chunk.count)
            if n < 0 && errno == EINTR { continue }
            if n <= 0 { break }
            bytes += chunk[0..<n]
        }
        let maps = String(decoding: bytes, as: UTF8.self)
        for line in maps.split(separator: "\n") {
            guard let slash = line.firstIndex(of: "/") else { continue }
            let file = String(line[slash...])
            guard file.hasSuffix(".so") || file.contains(".so.") else { continue }
            folders.insert((file as NSString).deletingLastPathComponent)
        }
        return folders.filter { FileManager.default.fileExists(atPath: $0) }.sorted()
    }()
}
