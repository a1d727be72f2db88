import Foundation
import JWTKit
import SwiftASN1
import X509

/// Why a signed App Store payload was refused. Verification fails closed: anything unexpected is
/// one of these.
public struct AppStoreVerificationError: Error, Sendable, Equatable, CustomStringConvertible {
    public enum Kind: String, Sendable { case malformed, untrusted, wrongBundle, wrongEnvironment }
    public var kind: Kind
    public var detail: String
    public var description: String { detail }
    public init(kind: Kind, detail: String) { self.kind = kind; self.detail = detail }
}

/// Verifies Apple's signed data offline, as Apple's App Store Server Library does: ES256 over a
/// JWS whose `x5c` chain (leaf, intermediate, root) leads to one of the configured Apple root
/// certificates, with Apple's marker extensions on the leaf and the intermediate, checked at the
/// payload's signedDate; then the bundle id and environment.
public struct AppStoreVerifier: Sendable {
    /// Marker extension on Apple's App Store receipt-signing leaf certificate.
    public static let leafOID: ASN1ObjectIdentifier = [1, 2, 840, 113635, 100, 6, 11, 1]
    /// Marker extension on Apple's WWDR intermediate certificate.
    public static let intermediateOID: ASN1ObjectIdentifier = [1, 2, 840, 113635, 100, 6, 2, 1]

    let verifier: X5CVerifier
    public let bundleId: String
    /// "Production" or "Sandbox".
    public let environment: String

    /// - Parameter rootCertificates: DER or PEM bytes of the trusted roots (Apple Root CA - G3).
    public init(rootCertificates: [[UInt8]], bundleId: String, environment: String) throws {
        guard !rootCertificates.isEmpty else {
            throw AppStoreVerificationError(kind: .untrusted, detail: "no Apple root certificate is configured (appStore.rootCertificates)")
        }
        let certificates = try rootCertificates.map { bytes -> Certificate in
            if let text = String(bytes: bytes, encoding: .utf8), text.contains("-----BEGIN CERTIFICATE-----") {
                return try Certificate(pemEncoded: text)
            }
            return try Certificate(derEncoded: bytes)
        }
        verifier = try X5CVerifier(rootCertificates: certificates)
        self.bundleId = bundleId
        self.environment = environment
    }

    /// A transaction from the app (`Transaction.jwsRepresentation`) or from a notification.
    public func verifyTransaction(_ jws: String) async throws(AppStoreVerificationError) -> AppStoreTransaction {
        let transaction: AppStoreTransaction = try await verify(jws)
        try check(bundle: transaction.bundleId, environment: transaction.environment)
        return transaction
    }

    public func verifyRenewalInfo(_ jws: String) async throws(AppStoreVerificationError) -> AppStoreRenewalInfo {
        let info: AppStoreRenewalInfo = try await verify(jws)
        try check(bundle: nil, environment: info.environment)
        return info
    }

    /// A notification (`signedPayload`), with its signed transaction and renewal info verified too.
    public func verifyNotification(_ jws: String) async throws(AppStoreVerificationError)
        -> (AppStoreNotificationPayload, AppStoreTransaction?, AppStoreRenewalInfo?) {
        let notification: AppStoreNotificationPayload = try await verify(jws)
        if let data = notification.data {
            try check(bundle: data.bundleId, environment: data.environment)
        }
        let transaction = try await notification.data?.signedTransactionInfo.asyncMap { jws throws(AppStoreVerificationError) in
            try await verifyTransaction(jws)
        }
        let renewal = try await notification.data?.signedRenewalInfo.asyncMap { jws throws(AppStoreVerificationError) in
            try await verifyRenewalInfo(jws)
        }
        return (notification, transaction, renewal)
    }

    private func check(bundle: String?, environment: String?) throws(AppStoreVerificationError) {
        if let bundle, bundle != bundleId {
            throw AppStoreVerificationError(kind: .wrongBundle, detail: "the payload is for the app \(bundle), not \(bundleId)")
        }
        if let environment, environment != self.environment {
            throw AppStoreVerificationError(kind: .wrongEnvironment, detail: "the payload is from the \(environment) environment; this server accepts \(self.environment)")
        }
    }

    private func verify<Payload: JWTPayload & ValidationTimePayload>(_ jws: String) async throws(AppStoreVerificationError) -> Payload {
        // Apple signs with ES256 and sends leaf, intermediate and root: anything else is refused
        // before any key is used.
        let parts = jws.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, let headerData = Data(base64URL: String(parts[0])),
              let header = try? JSONSerialization.jsonObject(with: headerData) as? [String: Any] else {
            throw AppStoreVerificationError(kind: .malformed, detail: "not a JWS (header.payload.signature)")
        }
        guard header["alg"] as? String == "ES256" else {
            throw AppStoreVerificationError(kind: .untrusted, detail: "the JWS is not signed with ES256")
        }
        guard let x5c = header["x5c"] as? [String], x5c.count == 3 else {
            throw AppStoreVerificationError(kind: .untrusted, detail: "the JWS does not carry Apple's three-certificate x5c chain")
        }
        do {
            return try await verifier.verifyJWS(Array(jws.utf8), as: Payload.self, jsonDecoder: JSONDecoder(),
                                                validationTime: .signedDate) {
                AppleMarkerPolicy()
            }
        } catch let error as DecodingError {
            throw AppStoreVerificationError(kind: .malformed, detail: "the payload is not what Apple sends: \(error)")
        } catch {
            throw AppStoreVerificationError(kind: .untrusted, detail: "the signature or its certificate chain is not valid: \(error)")
        }
    }
}

/// The chain must be Apple's: the leaf and the intermediate carry Apple's marker extensions.
struct AppleMarkerPolicy: VerifierPolicy {
    let verifyingCriticalExtensions: [ASN1ObjectIdentifier] = []

    mutating func chainMeetsPolicyRequirements(chain: UnverifiedCertificateChain) async -> PolicyEvaluationResult {
        guard chain.count >= 3 else { return .failsToMeetPolicy(reason: "the chain is shorter than leaf, intermediate, root") }
        guard chain[0].extensions[oid: AppStoreVerifier.leafOID] != nil else {
            return .failsToMeetPolicy(reason: "the leaf certificate lacks Apple's App Store marker extension")
        }
        guard chain[1].extensions[oid: AppStoreVerifier.intermediateOID] != nil else {
            return .failsToMeetPolicy(reason: "the intermediate certificate lacks Apple's WWDR marker extension")
        }
        return .meetsPolicy
    }
}

extension Optional {
    func asyncMap<T, E: Error>(_ transform: (Wrapped) async throws(E) -> T) async throws(E) -> T? {
        switch self {
        case .none: return nil
        case .some(let value): return try await transform(value)
        }
    }
}

extension Data {
    init?(base64URL text: String) {
        var base64 = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while base64.count % 4 != 0 { base64 += "=" }
        self.init(base64Encoded: base64)
    }
}
