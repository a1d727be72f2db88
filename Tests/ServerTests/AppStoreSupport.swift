import AppStore
import Crypto
import Foundation
import JWTKit
import SwiftASN1
import X509

/// A certificate chain shaped like Apple's (root, intermediate with the WWDR marker, leaf with the
/// App Store marker), made with P-256 keys inside the test, and a signer of StoreKit-style JWS.
struct TestAppleChain: Sendable {
    let rootKey = P256.Signing.PrivateKey()
    let intermediateKey = P256.Signing.PrivateKey()
    let leafKey = P256.Signing.PrivateKey()
    let root: Certificate
    let intermediate: Certificate
    let leaf: Certificate

    /// - Parameters:
    ///   - leafValidity: when the leaf certificate is valid (an expired leaf: a past range).
    ///   - markers: whether the leaf and intermediate carry Apple's marker extensions.
    init(leafValidity: ClosedRange<Date>? = nil, markers: Bool = true) throws {
        let now = Date()
        let rootName = try DistinguishedName {
            CommonName("Moments Test Root CA - G3"); OrganizationName("Moments Tests")
        }
        let intermediateName = try DistinguishedName {
            CommonName("Moments Test WWDR CA"); OrganizationName("Moments Tests")
        }
        let leafName = try DistinguishedName {
            CommonName("Moments Test StoreKit Signing"); OrganizationName("Moments Tests")
        }
        root = try Certificate(
            version: .v3, serialNumber: .init(), publicKey: .init(rootKey.publicKey),
            notValidBefore: now.addingTimeInterval(-10 * 365 * 86400),
            notValidAfter: now.addingTimeInterval(10 * 365 * 86400),
            issuer: rootName, subject: rootName, signatureAlgorithm: .ecdsaWithSHA256,
            extensions: try Certificate.Extensions {
                Critical(BasicConstraints.isCertificateAuthority(maxPathLength: nil))
                Critical(KeyUsage(keyCertSign: true, cRLSign: true))
            },
            issuerPrivateKey: .init(rootKey))
        var intermediateExtensions = try Certificate.Extensions {
            Critical(BasicConstraints.isCertificateAuthority(maxPathLength: 0))
            Critical(KeyUsage(keyCertSign: true, cRLSign: true))
        }
        if markers {
            try intermediateExtensions.append(
                Certificate.Extension(oid: AppStoreVerifier.intermediateOID, critical: false, value: [0x05, 0x00]))
        }
        intermediate = try Certificate(
            version: .v3, serialNumber: .init(), publicKey: .init(intermediateKey.publicKey),
            notValidBefore: now.addingTimeInterval(-5 * 365 * 86400),
            notValidAfter: now.addingTimeInterval(5 * 365 * 86400),
            issuer: rootName, subject: intermediateName, signatureAlgorithm: .ecdsaWithSHA256,
            extensions: intermediateExtensions, issuerPrivateKey: .init(rootKey))
        var leafExtensions = try Certificate.Extensions {
            Critical(BasicConstraints.notCertificateAuthority)
            Critical(KeyUsage(digitalSignature: true))
        }
        if markers {
            try leafExtensions.append(
                Certificate.Extension(oid: AppStoreVerifier.leafOID, critical: false, value: [0x05, 0x00]))
        }
        let validity = leafValidity ?? now.addingTimeInterval(-365 * 86400)...now.addingTimeInterval(365 * 86400)
        leaf = try Certificate(
            version: .v3, serialNumber: .init(), publicKey: .init(leafKey.publicKey),
            notValidBefore: validity.lowerBound, notValidAfter: validity.upperBound,
            issuer: intermediateName, subject: leafName, signatureAlgorithm: .ecdsaWithSHA256,
            extensions: leafExtensions, issuerPrivateKey: .init(intermediateKey))
    }

    /// The root as DER, as an operator would install Apple's.
    var rootDER: [UInt8] {
        var serializer = DER.Serializer()
        try! serializer.serialize(root)
        return serializer.serializedBytes
    }

    func write(rootTo path: String) throws {
        try Data(rootDER).write(to: URL(fileURLWithPath: path))
    }

    /// A JWS of `payload` signed by the leaf (ES256, raw r||s as JWS wants), with the x5c chain
    /// leaf, intermediate, root, as Apple sends it.
    func sign<Payload: Encodable>(_ payload: Payload) async throws -> String {
        let x5c = try [leaf, intermediate, root].map { certificate in
            var serializer = DER.Serializer()
            try serializer.serialize(certificate)
            return Data(serializer.serializedBytes).base64EncodedString()
        }
        let header = try JSONSerialization.data(withJSONObject: ["alg": "ES256", "x5c": x5c])
        let signingInput = Self.base64URL(header) + "." + Self.base64URL(try JSONEncoder().encode(payload))
        let signature = try leafKey.signature(for: Data(signingInput.utf8))
        return signingInput + "." + Self.base64URL(signature.rawRepresentation)
    }

    static func base64URL(_ data: Data) -> String {
        data.base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }
}

enum StoreKitFixtures {
    static let bundleId = "com.moments.app"
    static let product = "com.moments.pro.monthly"

    static func transaction(
        account: String?, originalId: String = UUID().uuidString, expires: Date = Date().addingTimeInterval(30 * 86400),
        signed: Date = Date(), revoked: Date? = nil, bundleId: String = bundleId,
        environment: String = "Production", product: String = product
    ) -> AppStoreTransaction {
        AppStoreTransaction(
            transactionId: UUID().uuidString, originalTransactionId: originalId, bundleId: bundleId, productId: product,
            purchaseDate: signed, expiresDate: expires, revocationDate: revoked, appAccountToken: account,
            environment: environment, signedDate: signed)
    }
}
