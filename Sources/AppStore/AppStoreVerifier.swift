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
    /// Accepted environments: "Production", and "Sandbox" where App Review or TestFlight buy.
    public let environments: Set<String>
    /// How far a signedDate may be ahead of this server's clock.
    public static let clockSkew: TimeInterval = 300

    /// - Parameter rootCertificates: DER or PEM bytes of the trusted roots (Apple Root CA - G3).
    public init(rootCertificates: [[UInt8]], bundleId: String, environments: Set<String>) throws {
        guard !rootCertificates.isEmpty else {
            throw AppStoreVerificationError(
                kind: .untrusted, detail: "no Apple root certificate is configured (appStore.rootCertificates)")
        }
        let certificates = try rootCertificates.map { bytes -> Certificate in
            if let text = String(bytes: bytes, encoding: .utf8), text.contains("-----BEGIN CERTIFICATE-----") {
                return try Certificate(pemEncoded: text)
            }
            return try Certificate(derEncoded: bytes)
        }
        verifier = try X5CVerifier(rootCertificates: certificates)
        self.bundleId = bundleId
        self.environments = environments
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

    /// A verified notification and what it carries.
    public struct VerifiedNotification: Sendable {
        public var payload: AppStoreNotificationPayload
        public var transaction: AppStoreTransaction?
        public var renewal: AppStoreRenewalInfo?
        /// Why Apple's genuine payload is not for this server (another app or environment): it is
        /// acknowledged and ignored. Nil when it is for this server.
        public var notForThisServer: String?
    }

    /// A notification (`signedPayload`), with its signed transaction and renewal info verified too.
    /// Signature problems throw; a genuine payload for another app or environment does not (Apple
    /// must get its 200), it comes back with `notForThisServer` set.
    public func verifyNotification(_ jws: String) async throws(AppStoreVerificationError) -> VerifiedNotification {
        let notification: AppStoreNotificationPayload = try await verify(jws)
        var result = VerifiedNotification(payload: notification)
        do {
            if let data = notification.data { try check(bundle: data.bundleId, environment: data.environment) }
        } catch {
            result.notForThisServer = error.detail
            return result
        }
        do {
            result.transaction = try await notification.data?.signedTransactionInfo.asyncMap {
                jws throws(AppStoreVerificationError) in
                try await verifyTransaction(jws)
            }
            result.renewal = try await notification.data?.signedRenewalInfo.asyncMap {
                jws throws(AppStoreVerificationError) in
                try await verifyRenewalInfo(jws)
            }
        } catch  where error.kind == .wrongBundle || error.kind == .wrongEnvironment {
            result.notForThisServer = error.detail
        }
        return result
    }

    private func check(bundle: String?, environment: String?) throws(AppStoreVerificationError) {
        if let bundle, bundle != bundleId {
            throw AppStoreVerificationError(
                kind: .wrongBundle, detail: "the payload is for the app \(bundle), not \(bundleId)")
        }
        if let environment, !environments.contains(environment) {
            throw AppStoreVerificationError(
                kind: .wrongEnvironment,
                detail:
                    "the payload is from the \(environment) environment; this server accepts \(environments.sorted().joined(separator: ", "))"
            )
        }
    }

    private func verify<Payload: JWTPayload & ValidationTimePayload>(_ jws: String)
        async throws(AppStoreVerificationError) -> Payload
    {
        // Apple signs with ES256 and sends leaf, intermediate and root: anything else is refused
        // before any key is used.
        let parts = jws.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, let headerData = Data(base64URL: String(parts[0])),
            let header = try? JSONSerialization.jsonObject(with: headerData) as? [String: Any]
        else {
            throw AppStoreVerificationError(kind: .malformed, detail: "not a JWS (header.payload.signature)")
        }
        guard header["alg"] as? String == "ES256" else {
            throw AppStoreVerificationError(kind: .untrusted, detail: "the JWS is not signed with ES256")
        }
        guard let x5c = header["x5c"] as? [String], x5c.count == 3 else {
            throw AppStoreVerificationError(
                kind: .untrusted, detail: "the JWS does not carry Apple's three-certificate x5c chain")
        }
        // The chain is validated at the payload's signedDate (read here, trusted only once the
        // signature verifies); a date well ahead of this clock is refused.
        guard let payloadData = Data(base64URL: String(parts[1])),
            let object = try? JSONSerialization.jsonObject(with: payloadData) as? [String: Any],
            let signedMillis = (object["signedDate"] as? NSNumber)?.doubleValue
        else {
            throw AppStoreVerificationError(kind: .malformed, detail: "the payload has no signedDate")
        }
        let signedDate = Date(timeIntervalSince1970: signedMillis / 1000)
        guard signedDate.timeIntervalSinceNow <= Self.clockSkew else {
            throw AppStoreVerificationError(kind: .untrusted, detail: "the payload's signedDate is in the future")
        }
        do {
            return try await verifier.verifyJWS(
                Array(jws.utf8), as: Payload.self, jsonDecoder: JSONDecoder(),
                validationTime: .fixed(signedDate)
            ) {
                AppleMarkerPolicy()
            }
        } catch let error as DecodingError {
            throw AppStoreVerificationError(kind: .malformed, detail: "the payload is not what Apple sends: \(error)")
        } catch {
            throw AppStoreVerificationError(
                kind: .untrusted, detail: "the signature or its certificate chain is not valid: \(error)")
        }
    }
}

/// The chain must be Apple's: the leaf and the intermediate carry Apple's marker extensions.
struct AppleMarkerPolicy: VerifierPolicy {
    let verifyingCriticalExtensions: [ASN1ObjectIdentifier] = []

    mutating func chainMeetsPolicyRequirements(chain: UnverifiedCertificateChain) async -> PolicyEvaluationResult {
        guard chain.count >= 3 else {
            return .failsToMeetPolicy(reason: "the chain is shorter than leaf, intermediate, root")
        }
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
