import Crypto
import Foundation

/// An API client. Its API keys live in `api_key` (see APIKey.swift): an account has one or more,
/// each shown once at creation and stored only as its SHA-256.
public struct Account: Codable, Sendable, Equatable {
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
