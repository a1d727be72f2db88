import Foundation
import GRDB
import Store

extension AppDatabase {
    /// Creates an account and its first API key; returns the account with the key (the only time
    /// the key exists in clear).
    public func createAccount(label: String? = nil, plan: String = "free", now: Date = Date()) async throws -> (
        Account, String
    ) {
        let account = Account(id: UUID().uuidString.lowercased(), plan: plan, label: label, createdAt: now)
        let (key, secret) = APIKey.make(accountId: account.id, label: nil, now: now)
        try await writer.write { db in
            try account.insert(db)
            try key.insert(db)
        }
        return (account, secret)
    }

    /// The account holding the active (not revoked) key `apiKey`, or nil. Disabled accounts are
    /// returned too: callers that authenticate use `authenticate(keyHash:)`.
    public func account(apiKey: String) async throws -> Account? {
        let hash = Account.hash(apiKey: apiKey)
        return try await writer.read { db in
            try Account.fetchOne(
                db,
                sql: """
                    SELECT account.* FROM api_key JOIN account ON account.id = api_key.accountId
                    WHERE api_key.hash = ? AND api_key.revokedAt IS NULL
                    """, arguments: [hash])
        }
    }

    public func account(id: String) async throws -> Account? {
        try await writer.read { db in try Account.fetchOne(db, key: id) }
    }

    /// Disables (or enables again) an account. Takes effect on the next request: keys are checked
    /// against the database on every request. Nil: no such account.
    @discardableResult
    public func setDisabled(accountId: String, _ disabled: Bool, now: Date) async throws -> Account? {
        try await writer.write { db in
            guard var account = try Account.fetchOne(db, key: accountId) else { return nil }
            if disabled { account.disabledAt = account.disabledAt ?? now } else { account.disabledAt = nil }
            try account.update(db)
            return account
        }
    }

    /// Marks an account as a tester (sandbox purchases grant it pro) or not. Nil: no such account.
    @discardableResult
    public func setTester(accountId: String, _ tester: Bool) async throws -> Account? {
        try await writer.write { db in
            guard var account = try Account.fetchOne(db, key: accountId) else { return nil }
            account.tester = tester
            try account.update(db)
            return account
        }
    }
}
