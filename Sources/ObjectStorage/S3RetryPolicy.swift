/// Bounded exponential backoff with jitter for retryable S3 failures.
public struct S3RetryPolicy: Sendable, Equatable {
    /// Tries in all, the first included (1 = no retry).
    public var maxAttempts: Int
    /// Delay ceiling before the second try; doubled for each further try.
    public var baseDelay: Duration
    /// No single delay exceeds this.
    public var maxDelay: Duration

    public init(maxAttempts: Int = 4, baseDelay: Duration = .milliseconds(200), maxDelay: Duration = .seconds(5)) {
        self.maxAttempts = max(1, maxAttempts)
        self.baseDelay = baseDelay
        self.maxDelay = maxDelay
    }

    /// The delay before try `attempt + 1` after try `attempt` (1-based) failed: "equal jitter",
    /// half of the exponential step fixed and half random, so retries spread out but never bunch at 0.
    public func delay(afterAttempt attempt: Int, random: Double = Double.random(in: 0...1)) -> Duration {
        let step = min(baseDelay * (1 << min(max(attempt - 1, 0), 20)), maxDelay)
        return step / 2 + step / 2 * min(max(random, 0), 1)
    }
}
