import Foundation
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// Hands each child a uid of `IsolationSettings.childUsers` that no other child on this host holds:
/// a claim is an exclusive `flock` on the uid's file in a root-only folder, so the server and
/// worker processes of one host never share a uid, and a process that dies releases its claims.
/// A uid is released once its child and everything it started are gone (after the cgroup ended).
final class ChildUserSlots: Sendable {
    /// Root-only (0700): no other user can take or hold a claim.
    static let folder = "/run/moments/child-users"
    static let shared = ChildUserSlots()

    /// A uid held by this process, and the descriptor whose lock holds it.
    struct Claim: Sendable {
        var user: ChildUser
        fileprivate var fd: Int32
    }

    private let next = Mutex<UInt32>(0)

    /// A free uid of `range` (the same number as its group), or the reason there is none.
    func claim(in range: ClosedRange<UInt32>) -> Result<Claim, ClaimFailure> {
        if mkdir("/run/moments", 0o700) != 0 && errno != EEXIST
            || mkdir(Self.folder, 0o700) != 0 && errno != EEXIST
        {
            return .failure(ClaimFailure(reason: "cannot make \(Self.folder): \(String(cString: strerror(errno)))"))
        }
        var st = stat()
        guard lstat(Self.folder, &st) == 0, st.st_mode & S_IFMT == S_IFDIR, st.st_uid == geteuid(),
            st.st_mode & 0o077 == 0
        else {
            return .failure(ClaimFailure(reason: "\(Self.folder) is not a folder of this user's alone (0700)"))
        }
        let count = UInt64(range.upperBound - range.lowerBound) + 1
        // Starting after the last claim spreads uids: one just released is not reused at once.
        let start = next.withLock { value in
            defer { value = value &+ 1 }
            return UInt64(value) % count
        }
        for step in 0..<count {
            let uid = range.lowerBound + UInt32((start + step) % count)
            let fd = open("\(Self.folder)/\(uid)", O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0o600)
            guard fd >= 0 else { continue }
            if flock(fd, LOCK_EX | LOCK_NB) == 0 {
                return .success(Claim(user: ChildUser(uid: uid, gid: uid), fd: fd))
            }
            close(fd)
        }
        return .failure(ClaimFailure(reason: "every child uid of \(range) is in use on this host"))
    }

    /// Gives the uid back (its child and whatever it started are gone).
    func release(_ claim: Claim) {
        close(claim.fd)
    }

    struct ClaimFailure: Error {
        var reason: String
    }
}
