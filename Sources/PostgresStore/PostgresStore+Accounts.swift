import Foundation
import Store
import Logging
import PostgresNIO

/// Accounts and their API keys (AppDatabase's Account.swift and APIKey.swift). Changes to an
/// account's keys lock the account row first: two revocations racing for the last two keys, or
/// two creations for the last free place, are serialised as SQLite's single writer does.
extension PostgresStore {
    public func createAccount(label: String?, plan: String, now: Date) async throws -> (Account, String) {
        let account = Account(id: UUID().uuidString.lowercased(), plan: plan, label: label, createdAt: now)
        let (key, secret) = APIKey.make(accountId: account.id, label: nil, now: now)
        try await transaction { connection in
            try await connection.run(
                """
                INSERT INTO account (id, plan, label, "createdAt", "disabledAt", tester)
                VALUES (\(account.id), \(account.plan), \(account.label), \(account.createdAt), \(account.disabledAt), \(account.tester))
                """, logger: logger)
            try await Rows.insert(key, on: connection, logger: logger)
        }
        return (account, secret)
    }

    public func account(apiKey: String) async throws -> Account? {
        let hash = Account.hash(apiKey: apiKey)
        return try await rows(
            """
            SELECT account.id, account.plan, account.label, account."createdAt", account."disabledAt", account.tester
            FROM api_key JOIN account ON account.id = api_key."accountId"
            WHERE api_key.hash = \(hash) AND api_key."revokedAt" IS NULL
            """
        ).first.map(Rows.account)
    }

    public func account(id: String) async throws -> Account? {
        try await rows("SELECT \(unescaped: Rows.accountColumns) FROM account WHERE id = \(id)").first.map(Rows.account)
    }

    @discardableResult
    public func setDisabled(accountId: String, _ disabled: Bool, now: Date) async throws -> Account? {
        try await rows(
            """
            UPDATE account SET "disabledAt" = CASE WHEN \(disabled) THEN COALESCE("disabledAt", \(now)) ELSE NULL END
            WHERE id = \(accountId) RETURNING \(unescaped: Rows.accountColumns)
            """
        ).first.map(Rows.account)
    }

    @discardableResult
    public func setTester(accountId: String, _ tester: Bool) async throws -> Account? {
        try await rows(
            "UPDATE account SET tester = \(tester) WHERE id = \(accountId) RETURNING \(unescaped: Rows.accountColumns)"
        )
        .first.map(Rows.account)
    }

    // MARK: Keys

    public func authenticate(keyHash: String) async throws -> KeyLookup {
        var found: HotStatements.Authenticate.Row?
        for try await row in try await client.execute(HotStatements.Authenticate(keyHash: keyHash), logger: logger) {
            found = row
        }
        guard let (keyId, revoked, disabled, accountId, plan, label, createdAt, tester) = found else { return .unknown }
        if revoked { return .revoked }
        if disabled { return .disabled(accountId: accountId) }
        return .valid(
            Account(id: accountId, plan: plan, label: label, createdAt: createdAt, disabledAt: nil, tester: tester),
            keyId: keyId)
    }

    /// Fire and forget: the request that used the key does not wait for this write.
    public func recordKeyUse(keyId: String, at date: Date) {
        let client = self.pool, logger = self.logger
        keyUses.add {
            do {
                _ = try await client.query(
                    """
                    UPDATE api_key SET "lastUsedAt" = \(date) WHERE id = \(keyId) AND ("lastUsedAt" IS NULL OR "lastUsedAt" < \(date))
                    """, logger: logger
                ).collect()
            } catch {
                logger.debug("could not record a key's use", metadata: ["error": "\(PostgresStore.reason(error))"])
            }
        }
    }

    public func keyUsesRecorded() async {
        await keyUses.settled()
    }

    public func keys(accountId: String) async throws -> [APIKey] {
        try await rows(
            """
            SELECT \(unescaped: Rows.keyColumns) FROM api_key WHERE "accountId" = \(accountId) ORDER BY "createdAt", seq
            """
        ).map(Rows.key)
    }

    public func createKey(accountId: String, label: String?, now: Date) async throws -> Result<
        (APIKey, String), KeyRefusal
    > {
        let made = try await transaction { connection -> Result<(APIKey, String), KeyRefusal> in
            guard try await Self.lockAccount(accountId, on: connection, logger: logger) else {
                return .failure(.noSuchAccount)
            }
            let active =
                try await connection.rows(
                    """
                    SELECT COUNT(*) FROM api_key WHERE "accountId" = \(accountId) AND "revokedAt" IS NULL
                    """, logger: logger
                ).first?.decode(Int.self) ?? 0
            guard active < APIKey.maxActivePerAccount else {
                return .failure(.tooManyKeys(limit: APIKey.maxActivePerAccount))
            }
            let (key, secret) = APIKey.make(accountId: accountId, label: label, now: now)
            try await Rows.insert(key, on: connection, logger: logger)
            return .success((key, secret))
        }
        return made
    }

    public func revokeKey(id: String, accountId: String, now: Date) async throws -> Result<APIKey, KeyRefusal> {
        try await transaction { connection in
            guard try await Self.lockAccount(accountId, on: connection, logger: logger),
                var key = try await connection.rows(
                    "SELECT \(unescaped: Rows.keyColumns) FROM api_key WHERE id = \(id)", logger: logger
                )
                .first.map(Rows.key), key.accountId == accountId
            else { return .failure(.notFound) }
            if key.revokedAt != nil { return .success(key) }
            let others =
                try await connection.rows(
                    """
                    SELECT COUNT(*) FROM api_key WHERE "accountId" = \(accountId) AND "revokedAt" IS NULL AND id <> \(id)
                    """, logger: logger
                ).first?.decode(Int.self) ?? 0
            guard others > 0 else { return .failure(.lastActiveKey) }
            key.revokedAt = now
            try await connection.run("UPDATE api_key SET \"revokedAt\" = \(now) WHERE id = \(id)", logger: logger)
            return .success(key)
        }
    }

    public func rotateKey(accountId: String, label: String?, now: Date) async throws -> (
        key: APIKey, secret: String, revoked: Int
    )? {
        try await transaction { connection -> (key: APIKey, secret: String, revoked: Int)? in
            guard try await Self.lockAccount(accountId, on: connection, logger: logger) else { return nil }
            let revoked = try await connection.run(
                """
                UPDATE api_key SET "revokedAt" = \(now) WHERE "accountId" = \(accountId) AND "revokedAt" IS NULL RETURNING id
                """, logger: logger)
            let (key, secret) = APIKey.make(accountId: accountId, label: label, now: now)
            try await Rows.insert(key, on: connection, logger: logger)
            return (key, secret, revoked)
        }
    }

    /// Locks the account row for the rest of the transaction; false when there is no such account.
    /// `FOR NO KEY UPDATE`: exclusive among the account's lockers (quota, keys) like `FOR UPDATE`,
    /// but it does not block the foreign-key checks of rows that merely reference the account
    /// (ledger lines written by a completing worker), which `FOR UPDATE` would.
    static func lockAccount(_ accountId: String, on connection: PostgresConnection, logger: Logger) async throws -> Bool
    {
        try await connection.run("SELECT id FROM account WHERE id = \(accountId) FOR NO KEY UPDATE", logger: logger) > 0
    }
}
