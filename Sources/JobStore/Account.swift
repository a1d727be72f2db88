import Crypto
import Foundation
import GRDB

/// An API client. The API key is shown once at creation and stored only as its SHA-256.
public struct Account: Codable, Sendable, Equatable, FetchableRecord, PersistableRecord {
    public static let databaseTableName = "account"

    /// A UUID (lowercase): StoreKit's appAccountToken is a UUID, so the account id can be one.
    public var id: String
    public var apiKeyHash: String
    /// The key's first characters, to tell keys apart without revealing them.
    public var apiKeyPrefix: String
    public var plan: String
    public var label: String?
    public var createdAt: Date

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
    /// Creates an account; returns it with its API key (the only time the key exists in clear).
    public func createAccount(label: String? = nil, plan: String = "free", now: Date = Date()) async throws -> (Account, String) {
        let key = Account.newAPIKey()
        let account = Account(id: UUID().uuidString.lowercased(), apiKeyHash: Account.hash(apiKey: key),
                              apiKeyPrefix: String(key.prefix(10)), plan: plan, label: label, createdAt: now)
        try await pool.write { db in try account.insert(db) }
        return (account, key)
    }

    /// The account holding `apiKey`, or nil.
    public func account(apiKey: String) async throws -> Account? {
        let hash = Account.hash(apiKey: apiKey)
        return try await pool.read { db in
            try Account.filter(Column("apiKeyHash") == hash).fetchOne(db)
        }
    }

    public func account(id: String) async throws -> Account? {
        try await pool.read { db in try Account.fetchOne(db, key: id) }
    }
}
