import Foundation
import JWTKit
import MomentsConfig
import NIOSSL

/// A start-up error in the `apns.*` settings: said once, plainly, and the process does not start.
public struct APNsConfigurationError: Error, CustomStringConvertible, Sendable {
    public var description: String
}

/// What pushing needs, read and checked once at start-up: the signing key, its id, the team, the
/// app's topic, the two endpoints and any extra trusted certificate authorities.
public struct APNsCredentials: Sendable {
    public let key: ES256PrivateKey
    public let keyId: String
    public let teamId: String
    public let topic: String
    public let endpoint: String
    public let sandboxEndpoint: String
    /// `apns.caFile`: trusted besides the system's roots (empty: the system's only).
    public let extraTrustRoots: [NIOSSLCertificate]
    /// The CA file the roots came from, naming the connection pool they belong to.
    public let caFile: String

    /// The credentials `settings` describe; nil when pushes are off (no key path). Throws when a
    /// key path is set but anything is missing or unreadable. Reads files: call it at start-up.
    public static func load(_ settings: PushSettings) throws -> APNsCredentials? {
        guard settings.isEnabled else { return nil }
        func fail(_ text: String) -> APNsConfigurationError { APNsConfigurationError(description: "APNs: \(text)") }
        guard let pem = FileManager.default.contents(atPath: settings.keyPath) else {
            throw fail("the key file APNS_KEY_PATH=\(settings.keyPath) cannot be read")
        }
        let key: ES256PrivateKey
        do {
            key = try ES256PrivateKey(pem: String(decoding: pem, as: UTF8.self))
        } catch {
            throw fail("APNS_KEY_PATH=\(settings.keyPath) is not an APNs signing key (a PKCS#8 P-256 .p8 file)")
        }
        for (name, value) in [("APNS_KEY_ID", settings.keyId), ("APNS_TEAM_ID", settings.teamId)] {
            guard (1...32).contains(value.count), value.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber) })
            else {
                throw fail(
                    "\(name) must be set to the identifier Apple shows (10 letters and digits), not \"\(value)\"")
            }
        }
        guard !settings.topic.isEmpty, settings.topic.count <= 255,
            settings.topic.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "." || $0 == "-") })
        else {
            throw fail("APNS_TOPIC must be set to the app's bundle id (such as com.example.moments)")
        }
        for (name, value) in [("APNS_ENDPOINT", settings.endpoint), ("APNS_SANDBOX_ENDPOINT", settings.sandboxEndpoint)]
        {
            guard let url = URL(string: value), url.scheme == "https", url.host != nil,
                url.path.isEmpty || url.path == "/"
            else {
                throw fail("\(name) must be an https origin such as https://api.push.apple.com, not \"\(value)\"")
            }
        }
        var roots: [NIOSSLCertificate] = []
        if !settings.caFile.isEmpty {
            guard let data = FileManager.default.contents(atPath: settings.caFile),
                let certificates = try? NIOSSLCertificate.fromPEMBytes(Array(data)), !certificates.isEmpty
            else {
                throw fail("APNS_CA_FILE=\(settings.caFile) is not a readable PEM file of certificates")
            }
            roots = certificates
        }
        func origin(_ text: String) -> String { text.hasSuffix("/") ? String(text.dropLast()) : text }
        return APNsCredentials(
            key: key, keyId: settings.keyId, teamId: settings.teamId, topic: settings.topic,
            endpoint: origin(settings.endpoint), sandboxEndpoint: origin(settings.sandboxEndpoint),
            extraTrustRoots: roots, caFile: settings.caFile)
    }
}
