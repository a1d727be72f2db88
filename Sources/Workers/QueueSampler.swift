import Foundation
import Store
import Synchronization
import Telemetry

/// Samples the store's queue into the queue metrics (`QueueMetrics`): jobs pending and processing,
/// and the age of the oldest runnable pending job. Sampled when metrics are scraped, at most once
/// per `minInterval` (a scrape storm reads the database once), so the numbers are never older
/// than the scrape plus `minInterval`.
public final class QueueSampler: Sendable {
    private let statistics: @Sendable (Date) async throws -> QueueStatistics
    private let clock: @Sendable () -> Date
    private let minInterval: TimeInterval
    private let last = Mutex<Date?>(nil)

    public init(
        minInterval: TimeInterval = 2, clock: @escaping @Sendable () -> Date = { Date() },
        statistics: @escaping @Sendable (Date) async throws -> QueueStatistics
    ) {
        self.statistics = statistics
        self.clock = clock
        self.minInterval = minInterval
    }

    /// Any store (`MomentsStore` engines implement `queueStatistics(now:)`).
    public convenience init(
        store: some QueueRepository, minInterval: TimeInterval = 2, clock: @escaping @Sendable () -> Date = { Date() }
    ) {
        self.init(minInterval: minInterval, clock: clock) { now in try await store.queueStatistics(now: now) }
    }

    /// Takes a sample unless one was taken less than `minInterval` ago. A failed read keeps the
    /// last values (and is retried on the next scrape).
    public func refresh() async {
        let now = clock()
        let due = last.withLock { last -> Bool in
            if let previous = last, now.timeIntervalSince(previous) >= 0, now.timeIntervalSince(previous) < minInterval
            {
                return false
            }
            last = now
            return true
        }
        guard due else { return }
        do {
            let sample = try await statistics(now)
            QueueMetrics.record(
                pending: sample.pending, processing: sample.processing,
                oldestPendingSeconds: sample.oldestPendingSeconds)
        } catch {
            last.withLock { $0 = nil }
        }
    }
}
