import Crypto
import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// The server's own secret: what media links are signed with and webhook signing secrets are
/// sealed under, so that a copy of the database alone forges no link and signs no webhook. It
/// never lives in the database: `security.serverSecret` (the environment, for processes on many
/// hosts, which must share it), else a 0600 file in the storage, made on first start.
public struct ServerSecret: Sendable {
    private let material: SymmetricKey

    public init(_ material: Data) { self.material = SymmetricKey(data: material) }

    /// From `configured` (any text of 32 characters or more), else the file at `path` (made with
    /// 32 random bytes, mode 0600, when absent; made private again when others could read it).
    public static func load(configured: String, file path: String) throws -> ServerSecret {
        if !configured.isEmpty {
            guard configured.utf8.count >= 32 else { throw Failure.tooShort }
            return ServerSecret(Data(configured.utf8))
        }
        if let existing = FileManager.default.contents(atPath: path), existing.count >= 32 {
            chmod(path, 0o600)
            return ServerSecret(existing)
        }
        let fresh = Data(SymmetricKey(size: .bits256).withUnsafeBytes { Array($0) })
        // The storage folder may not exist yet (a shared store keeps nothing else in it).
        try? FileManager.default.createDirectory(
            atPath: (path as NSString).deletingLastPathComponent, withIntermediateDirectories: true,
            attributes: [.posixPermissions: 0o700])
        let fd = Glibc.open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0o600)
        guard fd >= 0 else {
            // Another process of this host made it first: use theirs.
            if errno == EEXIST, let theirs = FileManager.default.contents(atPath: path), theirs.count >= 32 {
                return ServerSecret(theirs)
            }
            throw Failure.unwritable(path: path, reason: String(cString: strerror(errno)))
        }
        defer { close(fd) }
        let written = fresh.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        guard written == fresh.count, fsync(fd) == 0 else {
            unlink(path)
            throw Failure.unwritable(path: path, reason: String(cString: strerror(errno)))
        }
        return ServerSecret(fresh)
    }

    public enum Failure: Error, CustomStringConvertible {
        case tooShort
        case unwritable(path: String, reason: String)
        public var description: String {
            switch self {
            case .tooShort: "security.serverSecret must be at least 32 characters"
            case .unwritable(let path, let reason): "cannot make the server secret \(path): \(reason)"
            }
        }
    }

    /// A key for one use, derived from the secret (HKDF-SHA256): one use's key says nothing of another's.
    public func key(for purpose: String) -> SymmetricKey {
        HKDF<SHA256>.deriveKey(
            inputKeyMaterial: material, salt: Data("moments".utf8), info: Data(purpose.utf8), outputByteCount: 32)
    }

    static let sealedPrefix = "sealed1:"

    /// `plain` sealed (AES-GCM under the key for `purpose`), as text for a database column.
    public func seal(_ plain: String, purpose: String) -> String {
        let box = try? AES.GCM.seal(Data(plain.utf8), using: key(for: purpose))
        guard let combined = box?.combined else { return plain }
        return Self.sealedPrefix + combined.base64EncodedString()
    }

    /// What `seal` sealed; a value stored before sealing existed comes back as it is; nil when it
    /// was sealed under another secret (or altered).
    public func open(_ stored: String, purpose: String) -> String? {
        guard stored.hasPrefix(Self.sealedPrefix) else { return stored }
        guard let combined = Data(base64Encoded: String(stored.dropFirst(Self.sealedPrefix.count))),
            let box = try? AES.GCM.SealedBox(combined: combined),
            let plain = try? AES.GCM.open(box, using: key(for: purpose))
        else { return nil }
        return String(decoding: plain, as: UTF8.self)
    }

    /// Whether `stored` is sealed (a value stored before sealing existed is not).
    public static func isSealed(_ stored: String) -> Bool { stored.hasPrefix(sealedPrefix) }
}
