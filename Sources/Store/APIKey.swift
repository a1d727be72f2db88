import Foundation

/// One API key of an account. The secret is shown once, at creation; the database keeps its
/// SHA-256 and its first characters (to tell keys apart). A revoked key stays listed, and stops
/// working on the next request.
public struct APIKey: Codable, Sendable, Equatable {
        public var id: String
    public var accountId: String
    public var hash: String
    /// The key's first characters ("mk_" and 7 more).
    public var prefix: String
    public var label: String?
    public var createdAt: Date
    /// Updated at most about once a minute per key, off the request path.
    public var lastUsedAt: Date?
    public var revokedAt: Date?

    public var isActive: Bool { revokedAt == nil }

    /// Active keys an account may hold at once.
    public static let maxActivePerAccount = 10

    /// A new key for `accountId` and its secret.
    public static func make(accountId: String, label: String?, now: Date) -> (APIKey, String) {
        let secret = Account.newAPIKey()
        let key = APIKey(
            id: UUID().uuidString.lowercased(), accountId: accountId, hash: Account.hash(apiKey: secret),
            prefix: String(secret.prefix(10)), label: label, createdAt: now, lastUsedAt: nil, revokedAt: nil)
        return (key, secret)
    }
}

/// What the key presented with a request is worth, read fresh from the database.
public enum KeyLookup: Sendable, Equatable {
    /// An active key of an enabled account.
    case valid(Account, keyId: String)
    /// An active key of a disabled account.
    case disabled(accountId: String)
    /// A key that was revoked.
    case revoked
    /// No such key.
    case unknown
}

/// Why a key could not be created or revoked.
public enum KeyRefusal: Error, Sendable, Equatable {
    /// No such key for this account (another account's key looks the same).
    case notFound
    /// Revoking it would leave the account without an active key.
    case lastActiveKey
    /// The account already holds `APIKey.maxActivePerAccount` active keys.
    case tooManyKeys(limit: Int)
    case noSuchAccount
}
