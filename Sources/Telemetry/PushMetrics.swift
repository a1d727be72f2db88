import Prometheus

/// Pushes to APNs (the names are in `MomentsMetrics`): accepted ones, and every refused or
/// unanswered attempt by its reason (APNs' own, or timeout, connection, tls, signing).
public enum PushMetrics {
    /// The reason labels a scrape may show; anything else is counted as "other".
    public static let reasons: [String] = [
        "Unregistered", "BadDeviceToken", "DeviceTokenNotForTopic", "ExpiredProviderToken", "InvalidProviderToken",
        "TooManyProviderTokenUpdates", "TooManyRequests", "InternalServerError", "ServiceUnavailable", "Shutdown",
        "BadTopic", "TopicDisallowed", "PayloadTooLarge", "Forbidden",
        "timeout", "connection", "tls", "signing", "expired", "other"
    ]

    public static func sent() { sentCounter.increment() }

    public static func failed(reason: String) {
        failedCounter(reasons.contains(reason) ? reason : "other").increment()
    }

    static var sentCounter: Counter {
        MomentsMetrics.registry.makeCounter(name: MomentsMetrics.pushesSent, help: MomentsMetrics.pushesSentHelp)
    }

    static func failedCounter(_ reason: String) -> Counter {
        MomentsMetrics.registry.makeCounter(
            name: MomentsMetrics.pushFailures, labels: [("reason", reason)],
            help: MomentsMetrics.pushFailuresHelp)
    }
}
