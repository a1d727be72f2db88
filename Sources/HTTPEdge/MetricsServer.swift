import Hummingbird
import Logging
import MomentsConfig
import ServiceLifecycle
import Telemetry

/// A Hummingbird application (a Service) serving only /metrics and /health.
public typealias MetricsServer = Application<RouterResponder<BasicRequestContext>>

/// A process without the API (`moments worker`) serves its metrics on a port of its own: a small
/// HTTP application with GET /metrics (token as on the API) and GET /health, nothing else.
///
/// - Parameters:
///   - port: 0 picks a free port (tests); `workerMetricsServer` treats 0 as "off".
///   - refresh: runs before each /metrics answer (e.g. `QueueSampler.refresh`).
public func makeMetricsServer(
    host: String, port: Int, token: String, logger: Logger,
    refresh: @escaping @Sendable () async -> Void = {}
) -> MetricsServer {
    Application(
        router: buildMetricsRouter(token: token, refresh: refresh),
        configuration: .init(address: .hostname(host, port: port), serverName: "Moments"), logger: logger)
}

/// The metrics server of a worker process as configured (`metrics.workerPort` at `host`, usually
/// `http.host`), or nil when `metrics.workerPort` is 0. It is a Service: run it in the worker's
/// ServiceGroup with the JobRunner, or alone with `runService()`.
public func workerMetricsServer(
    _ operations: OperationsSettings, host: String, logger: Logger,
    refresh: @escaping @Sendable () async -> Void = {}
) -> MetricsServer? {
    guard operations.metricsWorkerPort > 0 else { return nil }
    return makeMetricsServer(
        host: host, port: operations.metricsWorkerPort, token: operations.metricsToken, logger: logger, refresh: refresh
    )
}

/// `workerMetricsServer` as a member of the worker's ServiceGroup (nil when off). Metrics are not
/// essential: a port already taken (two workers on one host with the same `metrics.workerPort`)
/// is logged as an error and the worker goes on without its metrics server.
public func workerMetricsService(
    _ operations: OperationsSettings, host: String, logger: Logger,
    refresh: @escaping @Sendable () async -> Void = {}
) -> ServiceGroupConfiguration.ServiceConfiguration? {
    guard let server = workerMetricsServer(operations, host: host, logger: logger, refresh: refresh) else { return nil }
    return .init(
        service: NonEssentialService(
            base: server, logger: logger, what: "metrics server on port \(operations.metricsWorkerPort)"),
        successTerminationBehavior: .ignore, failureTerminationBehavior: .ignore, serviceName: "metrics")
}

/// Runs `base`; if it fails, logs why and returns (its group goes on).
public struct NonEssentialService: Service {
    public let base: any Service
    public let logger: Logger
    public let what: String

    public func run() async {
        do {
            try await base.run()
        } catch {
            guard !Task.isCancelled else { return }
            logger.error("the \(what) stopped; the process goes on without it", metadata: ["error": "\(error)"])
        }
    }
}

/// Serves the worker's metrics until the task is cancelled or the process is told to stop.
public func runMetricsServer(
    host: String, port: Int, token: String, logger: Logger,
    refresh: @escaping @Sendable () async -> Void = {}
) async throws {
    try await makeMetricsServer(host: host, port: port, token: token, logger: logger, refresh: refresh).runService()
}

/// /metrics and /health on a plain context.
public func buildMetricsRouter(token: String, refresh: @escaping @Sendable () async -> Void) -> Router<BasicRequestContext> {
    let router = Router(context: BasicRequestContext.self)
    router.add(middleware: HTTPMetricsMiddleware())
    MetricsController(token: token, refresh: refresh).addRoutes(to: router)
    router.get("/health") { _, _ in HealthResponse(status: "ok") }
    return router
}

/// The body of GET /health and GET /ready: `{"status":"ok"}`, `{"status":"ready"}`.
public struct HealthResponse: ResponseEncodable {
    public var status: String
    public init(status: String) { self.status = status }
}
