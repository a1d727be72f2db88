import Foundation
import GRDB
import Store

extension AppDatabase {
    /// The key whose SHA-256 is `keyHash`, joined with its account: one indexed lookup with a
    /// cached statement on the caller's thread (no transaction: one SELECT is atomic), so every
    /// request sees revocations and disabled accounts at once without costing a write.
    public func authenticate(keyHash: String) async throws -> KeyLookup {
        try await lookup { db in
            let statement = try db.cachedStatement(
                sql: """
                    SELECT api_key.id, api_key.revokedAt IS NOT NULL, account.disabledAt IS NOT NULL,
                           account.id, account.plan, account.label, account.createdAt, account.tester
                    FROM api_key JOIN account ON account.id = api_key.accountId WHERE api_key.hash = ?
                    """)
            guard let row = try Row.fetchOne(statement, arguments: [keyHash]) else { return .unknown }
            if row[1] as Bool { return .revoked }
            if row[2] as Bool { return .disabled(accountId: row[3]) }
            return .valid(
                Account(id: row[3], plan: row[4], label: row[5], createdAt: row[6], disabledAt: nil, tester: row[7]),
                keyId: row[0])
        }
    }

    /// Records that a key was used, on the database's writer queue (the caller does not wait).
    public func recordKeyUse(keyId: String, at date: Date) {
        writer.asyncWriteWithoutTransaction { db in
            try? db.execute(
                sql: "UPDATE api_key SET lastUsedAt = ? WHERE id = ? AND (lastUsedAt IS NULL OR lastUsedAt < ?)",
                arguments: [date, keyId, date])
        }
    }

    /// The writer runs writes in order: an empty write after them returns once they are done.
    public func keyUsesRecorded() async {
        _ = try? await writer.write { _ in }
    }

    /// Every key of the account (active and revoked), oldest first.
    public func keys(accountId: String) async throws -> [APIKey] {
        try await writer.read { db in
            try APIKey.filter(Column("accountId") == accountId).order(Column("createdAt"), Column.rowID).fetchAll(db)
        }
    }

    /// A new key for the account; the secret is returned this once.
    public func createKey(accountId: String, label: String?, now: Date) async throws -> Result<
        (APIKey, String), KeyRefusal
    > {
        try await writer.write { db in
            guard try Account.exists(db, key: accountId) else { return .failure(.noSuchAccount) }
            let active = try APIKey.filter(Column("accountId") == accountId && Column("revokedAt") == nil).fetchCount(
                db)
            guard active < APIKey.maxActivePerAccount else {
                return .failure(.tooManyKeys(limit: APIKey.maxActivePerAccount))
            }
            let (key, secret) = APIKey.make(accountId: accountId, label: label, now: now)
            try key.insert(db)
            return .success((key, secret))
        }
    }

    /// Revokes one key of the account. Revoking a revoked key changes nothing; the account's last
    /// active key is refused, so an account is never locked out (an operator rotates or disables).
    public func revokeKey(id: String, accountId: String, now: Date) async throws -> Result<APIKey, KeyRefusal> {
        try await writer.write { db in
            guard var key = try APIKey.fetchOne(db, key: id), key.accountId == accountId else {
                return .failure(.notFound)
            }
            if key.revokedAt != nil { return .success(key) }
            let others = try APIKey.filter(
                Column("accountId") == accountId && Column("revokedAt") == nil && Column("id") != id
            ).fetchCount(db)
            guard others > 0 else { return .failure(.lastActiveKey) }
            key.revokedAt = now
            try key.update(db)
            return .success(key)
        }
    }

    /// An operator's rotation: a new key, and every other active key of the account revoked, in
    /// one transaction. Nil: no such account.
    public func rotateKey(accountId: String, label: String? = "rotated", now: Date) async throws -> (
        key: APIKey, secret: String, revoked: Int
    )? {
        try await writer.write { db in
            guard try Account.exists(db, key: accountId) else { return nil }
            try db.execute(
                sql: "UPDATE api_key SET revokedAt = ? WHERE accountId = ? AND revokedAt IS NULL",
                arguments: [now, accountId])
            let revoked = db.changesCount
            let (key, secret) = APIKey.make(accountId: accountId, label: label, now: now)
            try key.insert(db)
            return (key, secret, revoked)
        }
    }
}
