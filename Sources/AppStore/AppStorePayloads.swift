import Foundation
import JWTKit

/// Apple's dates are milliseconds since 1970.
private func appleDate(_ c: KeyedDecodingContainer<AppleKey>, _ key: String) throws -> Date? {
    try c.decodeIfPresent(Double.self, forKey: AppleKey(key)).map { Date(timeIntervalSince1970: $0 / 1000) }
}

/// A date the payload must carry (signedDate).
private func requiredAppleDate(_ c: KeyedDecodingContainer<AppleKey>, _ key: String) throws -> Date {
    guard let date = try appleDate(c, key) else {
        throw DecodingError.keyNotFound(AppleKey(key), .init(codingPath: [], debugDescription: "\(key) is missing"))
    }
    return date
}

private func encodeAppleDate(_ date: Date?, _ key: String, into c: inout KeyedEncodingContainer<AppleKey>) throws {
    if let date { try c.encode((date.timeIntervalSince1970 * 1000).rounded(), forKey: AppleKey(key)) }
}

struct AppleKey: CodingKey {
    var stringValue: String
    var intValue: Int? { nil }
    init(_ string: String) { stringValue = string }
    init?(stringValue: String) { self.stringValue = stringValue }
    init?(intValue: Int) { nil }
}

/// A StoreKit 2 transaction as Apple signs it (JWSTransactionDecodedPayload), the fields Moments uses.
public struct AppStoreTransaction: JWTPayload, ValidationTimePayload, Equatable {
    public var transactionId: String
    public var originalTransactionId: String
    public var bundleId: String
    public var productId: String
    public var purchaseDate: Date?
    public var expiresDate: Date?
    public var revocationDate: Date?
    /// The UUID the app set when purchasing (Moments asks the app to set the account id).
    public var appAccountToken: String?
    public var environment: String
    public var signedDate: Date

    public init(
        transactionId: String, originalTransactionId: String, bundleId: String, productId: String,
        purchaseDate: Date?, expiresDate: Date?, revocationDate: Date?, appAccountToken: String?,
        environment: String, signedDate: Date
    ) {
        self.transactionId = transactionId; self.originalTransactionId = originalTransactionId; self.bundleId = bundleId
        self.productId = productId; self.purchaseDate = purchaseDate; self.expiresDate = expiresDate
        self.revocationDate = revocationDate; self.appAccountToken = appAccountToken; self.environment = environment
        self.signedDate = signedDate
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: AppleKey.self)
        transactionId = try c.decode(String.self, forKey: AppleKey("transactionId"))
        originalTransactionId = try c.decode(String.self, forKey: AppleKey("originalTransactionId"))
        bundleId = try c.decode(String.self, forKey: AppleKey("bundleId"))
        productId = try c.decode(String.self, forKey: AppleKey("productId"))
        purchaseDate = try appleDate(c, "purchaseDate")
        expiresDate = try appleDate(c, "expiresDate")
        revocationDate = try appleDate(c, "revocationDate")
        appAccountToken = try c.decodeIfPresent(String.self, forKey: AppleKey("appAccountToken"))
        environment = try c.decode(String.self, forKey: AppleKey("environment"))
        signedDate = try requiredAppleDate(c, "signedDate")
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: AppleKey.self)
        try c.encode(transactionId, forKey: AppleKey("transactionId"))
        try c.encode(originalTransactionId, forKey: AppleKey("originalTransactionId"))
        try c.encode(bundleId, forKey: AppleKey("bundleId"))
        try c.encode(productId, forKey: AppleKey("productId"))
        for (key, date) in [
            ("purchaseDate", purchaseDate), ("expiresDate", expiresDate), ("revocationDate", revocationDate),
            ("signedDate", signedDate)
        ] {
            try encodeAppleDate(date, key, into: &c)
        }
        try c.encodeIfPresent(appAccountToken, forKey: AppleKey("appAccountToken"))
        try c.encode(environment, forKey: AppleKey("environment"))
    }

    public func verify(using algorithm: some JWTAlgorithm) async throws {}
}

/// Renewal information (JWSRenewalInfoDecodedPayload): the grace period's end.
public struct AppStoreRenewalInfo: JWTPayload, ValidationTimePayload, Equatable {
    public var originalTransactionId: String
    public var gracePeriodExpiresDate: Date?
    public var environment: String
    public var signedDate: Date

    public init(originalTransactionId: String, gracePeriodExpiresDate: Date?, environment: String, signedDate: Date) {
        self.originalTransactionId = originalTransactionId; self.gracePeriodExpiresDate = gracePeriodExpiresDate
        self.environment = environment; self.signedDate = signedDate
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: AppleKey.self)
        originalTransactionId = try c.decode(String.self, forKey: AppleKey("originalTransactionId"))
        gracePeriodExpiresDate = try appleDate(c, "gracePeriodExpiresDate")
        environment = try c.decode(String.self, forKey: AppleKey("environment"))
        signedDate = try requiredAppleDate(c, "signedDate")
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: AppleKey.self)
        try c.encode(originalTransactionId, forKey: AppleKey("originalTransactionId"))
        try encodeAppleDate(gracePeriodExpiresDate, "gracePeriodExpiresDate", into: &c)
        try c.encode(environment, forKey: AppleKey("environment"))
        try encodeAppleDate(signedDate, "signedDate", into: &c)
    }

    public func verify(using algorithm: some JWTAlgorithm) async throws {}
}

/// App Store Server Notifications V2 (responseBodyV2DecodedPayload).
public struct AppStoreNotificationPayload: JWTPayload, ValidationTimePayload, Equatable {
    public struct NotificationData: Codable, Sendable, Equatable {
        public var bundleId: String?
        public var environment: String?
        public var signedTransactionInfo: String?
        public var signedRenewalInfo: String?

        public init(bundleId: String?, environment: String?, signedTransactionInfo: String?, signedRenewalInfo: String?)
        {
            self.bundleId = bundleId; self.environment = environment
            self.signedTransactionInfo = signedTransactionInfo; self.signedRenewalInfo = signedRenewalInfo
        }
    }

    public var notificationType: String
    public var subtype: String?
    public var notificationUUID: String
    public var data: NotificationData?
    public var signedDate: Date

    public init(
        notificationType: String, subtype: String?, notificationUUID: String, data: NotificationData?, signedDate: Date
    ) {
        self.notificationType = notificationType; self.subtype = subtype; self.notificationUUID = notificationUUID
        self.data = data; self.signedDate = signedDate
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: AppleKey.self)
        notificationType = try c.decode(String.self, forKey: AppleKey("notificationType"))
        subtype = try c.decodeIfPresent(String.self, forKey: AppleKey("subtype"))
        notificationUUID = try c.decode(String.self, forKey: AppleKey("notificationUUID"))
        data = try c.decodeIfPresent(NotificationData.self, forKey: AppleKey("data"))
        signedDate = try requiredAppleDate(c, "signedDate")
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: AppleKey.self)
        try c.encode(notificationType, forKey: AppleKey("notificationType"))
        try c.encodeIfPresent(subtype, forKey: AppleKey("subtype"))
        try c.encode(notificationUUID, forKey: AppleKey("notificationUUID"))
        try c.encodeIfPresent(data, forKey: AppleKey("data"))
        try encodeAppleDate(signedDate, "signedDate", into: &c)
    }

    public func verify(using algorithm: some JWTAlgorithm) async throws {}
}
