import Foundation
import Store
import Synchronization

/// Accounts and their API keys: creating an account, and what a key is worth on each request.
public final class AccountService: Sendable {
    let database: any AccountRepository & KeyRepository
    let clock: @Sendable () -> Date

    public init(database: any AccountRepository & KeyRepository, clock: @escaping @Sendable () -> Date = { Date() }) {
        self.database = database
        self.clock = clock
    }

    public func createAccount(label: String?) async throws -> (Account, String) {
        try await database.createAccount(label: label, plan: "free", now: clock())
    }

    /// What `apiKey` is worth now. Every request reads its key and account from the database (one
    /// cached-statement lookup, tens of microseconds), so a revoked key or a disabled account is
    /// refused on the very next request: there is no cache to go stale. The key's lastUsedAt is
    /// written at most once per `keyUseInterval` per key by this process, on the database's writer
    /// queue, never waited for.
    public func authenticate(apiKey: String) async throws -> KeyLookup {
        // Keys are 46 characters; anything much longer is not one (and is not hashed).
        guard apiKey.utf8.count <= 200 else { return .unknown }
        let lookup = try await database.authenticate(keyHash: Account.hash(apiKey: apiKey))
        if case .valid(_, let keyId) = lookup {
            let now = clock()
            let due = keyUses.withLock { recorded -> Bool in
                if let last = recorded[keyId], now.timeIntervalSince(last) < Self.keyUseInterval { return false }
                if recorded.count >= 10_000 { recorded.removeAll(keepingCapacity: true) }
                recorded[keyId] = now
                return true
            }
            if due { database.recordKeyUse(keyId: keyId, at: now) }
        }
        return lookup
    }

    /// The account holding the active key `apiKey` (nil when unknown, revoked or disabled).
    public func account(apiKey: String) async throws -> Account? {
        if case .valid(let account, _) = try await authenticate(apiKey: apiKey) { return account }
        return nil
    }

    static let keyUseInterval: TimeInterval = 60
    /// When this process last recorded each key's use (so a burst of requests writes once).
    private let keyUses = Mutex<[String: Date]>([:])
}
