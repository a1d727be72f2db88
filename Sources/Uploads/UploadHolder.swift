import Foundation

/// Who holds a plain upload's place: this host, its boot, and this process (its pid and the
/// pid's start time, so a restarted server that got the same pid, as in a container, is told
/// apart). A server killed while uploads streamed leaves their places behind; the next process on
/// the same host frees those of processes that are gone before it admits its first upload, so the
/// account is not held up for the places' lease (`uploadAdmissionSeconds`). Other hosts' places
/// lapse by the lease alone.
struct UploadHolder: Equatable {
    var host: String
    var boot: String
    var pid: Int32
    var started: String

    var name: String { "\(host)/\(boot)/\(pid)/\(started)" }
    /// The prefix every place of this host and boot starts with.
    var hostPrefix: String { "\(host)/\(boot)/" }

    static let current: UploadHolder = {
        var buffer = [CChar](repeating: 0, count: 256)
        let host = gethostname(&buffer, buffer.count - 1) == 0 ? String(cString: buffer) : "host"
        let boot =
            (try? String(contentsOfFile: "/proc/sys/kernel/random/boot_id", encoding: .utf8))?
            .trimmingCharacters(in: .whitespacesAndNewlines) ?? "boot"
        let pid = getpid()
        return UploadHolder(
            host: host.replacingOccurrences(of: "/", with: "_"), boot: boot, pid: pid,
            started: startTime(of: pid) ?? "0")
    }()

    /// The process's start time in clock ticks after boot (field 22 of /proc/<pid>/stat); nil when
    /// there is no such process.
    static func startTime(of pid: Int32) -> String? {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
            let close = stat.lastIndex(of: ")")
        else { return nil }
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        // After the name: state is field 3, so start time (22) is the 20th here.
        return fields.count > 19 ? String(fields[19]) : nil
    }

    /// Whether the place `id` belongs to a process of this host and boot that is gone.
    static func isDead(_ id: String, on holder: UploadHolder = .current) -> Bool {
        guard id.hasPrefix(holder.hostPrefix) else { return false }
        let parts = id.dropFirst(holder.hostPrefix.count).split(separator: "/")
        guard parts.count >= 2, let pid = Int32(parts[0]) else { return false }
        if pid == holder.pid && String(parts[1]) == holder.started { return false }
        return startTime(of: pid) != String(parts[1])
    }
}
