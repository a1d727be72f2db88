import Configuration
import Foundation

/// Push notifications through Apple Push Notification service with a token-based key (`apns.*`).
/// Each key's default is written here and in Config/moments.json; the environment variable that
/// overrides it is in the comment. No key path: pushes are off (devices can still be registered).
public struct PushSettings: Sendable, Equatable {
    /// `apns.keyPath` / APNS_KEY_PATH: the .p8 signing key from the Apple Developer account
    /// (PKCS#8, P-256). Empty: pushes are off, said at start-up. A key that cannot be read is a
    /// start-up error.
    public var keyPath = ""
    /// `apns.keyId` / APNS_KEY_ID: the key's 10-character identifier (the token's `kid`).
    public var keyId = ""
    /// `apns.teamId` / APNS_TEAM_ID: the developer team's 10-character identifier (the token's `iss`).
    public var teamId = ""
    /// `apns.topic` / APNS_TOPIC: the app's bundle id (each push's `apns-topic`).
    public var topic = ""
    /// `apns.endpoint` / APNS_ENDPOINT: where pushes to production devices go.
    public var endpoint = "https://api.push.apple.com"
    /// `apns.sandboxEndpoint` / APNS_SANDBOX_ENDPOINT: where pushes to devices registered as
    /// `sandbox` (development builds) go.
    public var sandboxEndpoint = "https://api.sandbox.push.apple.com"
    /// `apns.caFile` / APNS_CA_FILE: a PEM file of certificate authorities trusted in addition to
    /// the system's when connecting to APNs (a local stand-in in tests). Empty: the system's only.
    public var caFile = ""
    /// `apns.maxDevicesPerAccount` / APNS_MAX_DEVICES_PER_ACCOUNT: devices an account may register;
    /// one more is refused (409) until one is removed.
    public var maxDevicesPerAccount = 20
    /// `apns.retryBackoffSeconds` / APNS_RETRY_BACKOFF_SECONDS: a push APNs could not take now
    /// (429, 5xx, no answer) is tried again after this, doubling each time (at most an hour), for
    /// an hour after the job's end.
    public var retryBackoffSeconds = 5.0

    public init() {}

    public init(reader config: ConfigReader) {
        let apns = config.scoped(to: "apns")
        apns.read("keyPath", into: &keyPath)
        apns.read("keyId", into: &keyId)
        apns.read("teamId", into: &teamId)
        apns.read("topic", into: &topic)
        apns.read("endpoint", into: &endpoint)
        apns.read("sandboxEndpoint", into: &sandboxEndpoint)
        apns.read("caFile", into: &caFile)
        apns.read("maxDevicesPerAccount", into: &maxDevicesPerAccount, in: 1...Int.max)
        apns.read("retryBackoffSeconds", into: &retryBackoffSeconds, in: 0.05...Double.infinity)
    }

    /// Pushes are sent only when a key is configured.
    public var isEnabled: Bool { !keyPath.isEmpty }
}
