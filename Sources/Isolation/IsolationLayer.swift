import CIsolation
import Foundation

/// The layers of a child's sandbox that depend on the machine. The rest (rlimits, the system-call
/// filters, no core dumps, its own process group) are set up on every Linux this builds for, and a
/// child whose rlimits or filter fail is not started either.
public enum IsolationLayer: String, Sendable, CaseIterable, Codable {
    /// A user of its own from `IsolationSettings.childUsers`, and its private view of the storage:
    /// needs root with CAP_SETUID, CAP_SETGID, CAP_CHOWN and CAP_SYS_ADMIN.
    case user
    /// Landlock (Linux 5.13+, enabled in the kernel's LSM list): the files it may touch.
    case landlock
    /// A cgroup v2 of its own that this process may create: everything it starts is ended with it.
    case cgroup

    /// Why this layer cannot be set up on this machine, in words for an operator; nil when it can.
    public var unavailable: String? {
        switch self {
        case .user:
            if geteuid() != 0 {
                return "the server does not run as root, so it cannot run children as users of their own"
            }
            return Self.hasCapabilities
                ? nil : "the server lacks CAP_SETUID, CAP_SETGID, CAP_CHOWN or CAP_SYS_ADMIN to run children as users of their own"
        case .landlock:
            return ChildAccess.isEnforced
                ? nil : "this kernel has no Landlock (Linux 5.13+ with landlock in its lsm= list)"
        case .cgroup:
            return ChildCgroup.parent != nil
                ? nil : "no cgroup v2 hierarchy this process may create cgroups in (delegate one to the server)"
        }
    }

    /// The layers missing on this machine that `allowed` does not excuse, with why: a child must
    /// not start while this is not empty.
    public static func missing(allowing allowed: Set<IsolationLayer>) -> [(IsolationLayer, String)] {
        allCases.compactMap { layer in
            guard !allowed.contains(layer), let why = layer.unavailable else { return nil }
            return (layer, why)
        }
    }

    /// One sentence for the log and /ready's log line: what is missing and how to go on.
    public static func problem(allowing allowed: Set<IsolationLayer>) -> String? {
        let missing = missing(allowing: allowed)
        guard !missing.isEmpty else { return nil }
        return "the sandbox for untrusted media is incomplete, so no upload is processed: "
            + missing.map { "\($0.0.rawValue): \($0.1)" }.joined(separator: "; ")
            + " (fix it, or allow the layer for development with isolation.allowWeaker)"
    }

    /// CAP_CHOWN (0), CAP_SETGID (6), CAP_SETUID (7) and CAP_SYS_ADMIN (21) in the effective set.
    static var hasCapabilities: Bool {
        var effective: UInt64 = 0
        guard moments_effective_capabilities(&effective) == 0 else { return false }
        let needed: UInt64 = 1 << 0 | 1 << 6 | 1 << 7 | 1 << 21
        return effective & needed == needed
    }
}
