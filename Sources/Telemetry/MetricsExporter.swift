import CoreMetrics
import Prometheus
import Synchronization

/// The process's one Prometheus registry. Every metric of Moments (see `MomentsMetrics`) lives in
/// it, and swift-metrics is bootstrapped onto it once, so what libraries record through
/// `Counter(label:)` and friends is exported too. Safe to touch from any number of services in one
/// process (tests build many): the registry is process-wide and the bootstrap happens once.
public enum MetricsExporter {
    /// Created on first use; never replaced.
    public static let registry = PrometheusCollectorRegistry()

    private static let bootstrapped = Atomic<Bool>(false)

    /// Points swift-metrics at `registry`; later calls do nothing. Called by everything that
    /// exports (the API's /metrics, the worker's metrics server).
    public static func bootstrap() {
        guard bootstrapped.compareExchange(expected: false, desired: true, ordering: .acquiringAndReleasing).exchanged
        else { return }
        MetricsSystem.bootstrap(PrometheusMetricsFactory(registry: registry))
    }

    /// The Content-Type of `exposition()`: the Prometheus text format, version 0.0.4.
    public static let contentType = "text/plain; version=0.0.4; charset=utf-8"

    /// Every metric in the Prometheus text format.
    public static func exposition() -> [UInt8] {
        MomentsMetrics.touch()
        var buffer: [UInt8] = []
        buffer.reserveCapacity(16 * 1024)
        registry.emit(into: &buffer)
        return buffer
    }
}
