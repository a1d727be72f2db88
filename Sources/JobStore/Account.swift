import Crypto
import Foundation
import GRDB

/// An API client. Its API keys live in `api_key` (see APIKey.swift): an account has one or more,
/// each shown once at creation and stored only as its SHA-256.
public struct Account: Codable, Sendable, Equatable, FetchableRecord, PersistableRecord {
    public static let databaseTableName = "account"

    /// A UUID (lowercase): StoreKit's appAccountToken is a UUID, so the account id can be one.
    public var id: String
    public var plan: String
    public var label: String?
    public var createdAt: Date
    /// Set by an operator (`moments accounts disable`): every key of the account is refused (403).
    public var disabledAt: Date?
    /// Marked by an operator (`moments accounts tester`): App Store sandbox (TestFlight) purchases
    /// grant pro to this account.
    public var tester: Bool

    public init(
        id: String, plan: String = "free", label: String?, createdAt: Date, disabledAt: Date? = nil,
        tester: Bool = false
    ) {
        self.id = id; self.plan = plan; self.label = label; self.createdAt = createdAt
        self.disabledAt = disabledAt; self.tester = tester
    }

    public var isDisabled: Bool { disabledAt != nil }

    /// A new API key: "mk_" and 32 random bytes in base64url (256 bits).
    public static func newAPIKey() -> String {
        var generator = SystemRandomNumberGenerator()
        let bytes = (0..<32).map { _ in UInt8.random(in: 0...255, using: &generator) }
        let encoded = Data(bytes).base64EncodedString()
            .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
        return "mk_" + encoded
    }

    public static func hash(apiKey: String) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var hex = [UInt8]()
        hex.reserveCapacity(64)
        for byte in SHA256.hash(data: Data(apiKey.utf8)) {
            hex.append(digits[Int(byte >> 4)])
            hex.append(digits[Int(byte & 0x0f)])
        }
        return String(decoding: hex, as: UTF8.self)
    }
}

extension AppDatabase {
    /// Creates an account and its first API key; returns the account with the key (the only time
    /// the key exists in clear).
    public func createAccount(label: String? = nil, plan: String = "free", now: Date = Date()) async throws -> (
        Account, String
    ) {
        let account = Account(id: UUID().uuidString.lowercased(), plan: plan, label: label, createdAt: now)
        let (key, secret) = APIKey.make(accountId: account.id, label: nil, now: now)
        try await pool.write { db in
            try account.insert(db)
            try key.insert(db)
        }
        return (account, secret)
    }

    /// The account holding the active (not revoked) key `apiKey`, or nil. Disabled accounts are
    /// returned too: callers that authenticate use `authenticate(keyHash:)`.
    public func account(apiKey: String) async throws -> Account? {
        let hash = Account.hash(apiKey: apiKey)
        return try await pool.read { db in
            try Account.fetchOne(
                db,
                sql: """
                    SELECT account.* FROM api_key JOIN account ON account.id = api_key.accountId
                    WHERE api_key.hash = ? AND api_key.revokedAt IS NULL
                    """, arguments: [hash])
        }
    }

    public func account(id: String) async throws -> Account? {
        try await pool.read { db in try Account.fetchOne(db, key: id) }
    }

    /// Disables (or enables again) an account. Takes effect on the next request: keys are checked
    /// against the database on every request. Nil: no such account.
    @discardableResult
    public func setDisabled(accountId: String, _ disabled: Bool, now: Date) async throws -> Account? {
        try await pool.write { db in
            guard var account = try Account.fetchOne(db, key: accountId) else { return nil }
            if disabled { account.disabledAt = account.disabledAt ?? now } else { account.disabledAt = nil }
            try account.update(db)
            return account
        }
    }

    /// Marks an account as a tester (sandbox purchases grant it pro) or not. Nil: no such account.
    @discardableResult
    public func setTester(accountId: String, _ tester: Bool) async throws -> Account? {
        try await pool.write { db in
            guard var account = try Account.fetchOne(db, key: accountId) else { return nil }
            account.tester = tester
            try account.update(db)
            return account
        }
    }
}
