import Configuration
import Foundation

/// Signed webhooks (`webhooks.*`). Each key's default is written here and in Config/moments.json;
/// the environment variable that overrides it is in the comment.
public struct WebhookSettings: Sendable, Equatable {
    /// `webhooks.allowPrivateTargets` / WEBHOOKS_ALLOW_PRIVATE_TARGETS: allow endpoints on loopback,
    /// private (RFC 1918, CGNAT, unique-local), link-local, unspecified and multicast addresses, and
    /// plain http URLs. Off in production (an endpoint could otherwise reach the service's own
    /// network); on for local development and tests.
    public var allowPrivateTargets = false
    /// `webhooks.retryBackoffSeconds` / WEBHOOKS_RETRY_BACKOFF_SECONDS: a delivery that failed is
    /// tried again after this, doubling with each attempt (at most an hour), for 24 hours.
    public var retryBackoffSeconds = 10.0
    /// `webhooks.pollSeconds` / WEBHOOKS_POLL_SECONDS: how often the dispatcher looks for due
    /// deliveries when no store event woke it (retries coming due, another process's news missed).
    public var pollSeconds = 5.0

    public init() {}

    public init(reader config: ConfigReader) {
        let webhooks = config.scoped(to: "webhooks")
        webhooks.read("allowPrivateTargets", into: &allowPrivateTargets)
        webhooks.read("retryBackoffSeconds", into: &retryBackoffSeconds, in: 0.05...Double.infinity)
        webhooks.read("pollSeconds", into: &pollSeconds, in: 0.05...Double.infinity)
    }
}
