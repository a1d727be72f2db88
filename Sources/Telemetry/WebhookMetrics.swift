import Prometheus

/// How a webhook delivery attempt ended.
public enum WebhookAttemptOutcome: String, Sendable, CaseIterable {
    /// A 2xx answer: the delivery is done.
    case delivered
    /// Anything else: the delivery is tried again later.
    case retried
    /// Anything else, past the 24 h window (or the endpoint was removed): given up.
    case gaveUp = "gave_up"
}

/// Webhook deliveries (the names are in `MomentsMetrics`).
public enum WebhookMetrics {
    public static func attempted(_ outcome: WebhookAttemptOutcome) {
        counter(outcome).increment()
    }

    static func counter(_ outcome: WebhookAttemptOutcome) -> Counter {
        MomentsMetrics.registry.makeCounter(
            name: MomentsMetrics.webhookAttempts, labels: [("outcome", outcome.rawValue)],
            help: MomentsMetrics.webhookAttemptsHelp)
    }
}
