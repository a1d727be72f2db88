import AppStore
import Foundation
import Logging
import MomentsConfig

/// The App Store verifier for the configured Apple root certificates, or why there is none: the
/// subscription endpoints then refuse (fail closed) with `unavailable` as the reason.
public struct AppStoreGate: Sendable {
    public let verifier: AppStoreVerifier?
    public let unavailable: String?

    public init(_ settings: AppStoreSettings, logger: Logger) {
        (verifier, unavailable) = Self.verifier(settings)
        if let unavailable {
            logger.notice("App Store verification is off", metadata: ["reason": "\(unavailable)"])
        }
    }

    static func verifier(_ settings: AppStoreSettings) -> (AppStoreVerifier?, String?) {
        do {
            let roots = try settings.rootCertificates.map { path -> [UInt8] in
                guard let data = FileManager.default.contents(atPath: path) else {
                    throw AppStoreVerificationError(
                        kind: .untrusted, detail: "the Apple root certificate \(path) is missing")
                }
                return [UInt8](data)
            }
            let verifier = try AppStoreVerifier(
                rootCertificates: roots, bundleId: settings.bundleId, environments: Set(settings.environments))
            return (verifier, nil)
        } catch {
            return (nil, "\(error)")
        }
    }
}
