import Foundation
import Hummingbird
import HummingbirdCore
import Jobs
import Logging
import MomentsConfig

/// Builds the HTTP application on a job service: routes, middleware, the transport limits of
/// `ServiceSettings` (connections, header and idle timeouts, body rate), and the workers as a
/// service of the application (they start and stop with it).
public func buildApplication(
    service: JobService, logger: Logger,
    operations: OperationsSettings = OperationsSettings()
) -> (app: some ApplicationProtocol, routes: RouteTable) {
    let resumable = ResumableUploads(service: service, logger: logger)
    let (router, table) = buildRouter(service: service, logger: logger, operations: operations, resumable: resumable)
    let settings = service.settings
    let server = HTTPServerBuilder.guardedHTTP1(
        counter: ConnectionCounter(limit: settings.maxConnections),
        headerTimeoutSeconds: settings.headerTimeoutSeconds, idleTimeoutSeconds: settings.idleTimeoutSeconds,
        minBytesPerSecond: settings.minUploadBytesPerSecond, stallSeconds: settings.uploadStallSeconds, logger: logger)
    let app = Application(
        router: router,
        server: server,
        configuration: .init(address: .hostname(settings.host, port: settings.port), serverName: "Moments"),
        services: [
            service.runner, ResumableUploadSweeper(uploads: resumable, intervalSeconds: settings.sweepIntervalSeconds)
        ],
        logger: logger)
    return (app, table)
}

/// The router alone (tests drive it with `.router`).
public func buildRouter(
    service: JobService, logger: Logger? = nil,
    operations: OperationsSettings = OperationsSettings(),
    resumable: ResumableUploads? = nil
) -> (Router<AppRequestContext>, RouteTable) {
    let router = Router(context: AppRequestContext.self)
    let table = RouteTable()
    router.add(middleware: HTTPMetricsMiddleware())
    router.add(middleware: RequestIDMiddleware())
    router.add(middleware: ProblemMiddleware())
    let protected = router.group().add(middleware: APIKeyMiddleware(service: service))

    let addresses = ClientAddressResolver(trustedProxies: service.settings.trustedProxies)
    if !addresses.invalid.isEmpty {
        logger?.error(
            "http.trustedProxies: entries that are not an address or CIDR range are ignored",
            metadata: ["entries": "\(addresses.invalid)"])
    }
    HealthController(service: service).addRoutes(to: router, table: table)
    OpenAPIController().addRoutes(to: router, table: table)
    StudioController().addRoutes(to: router, table: table)
    let queueSampler = QueueSampler(store: service.database)
    MetricsController(token: operations.metricsToken, refresh: { await queueSampler.refresh() }).addRoutes(
        to: router, table: table)
    AccountsController(
        service: service, limiter: CreationLimiter(perHour: service.settings.accountsPerAddressPerHour),
        addresses: addresses
    )
    .addRoutes(to: router, table: table)
    let uploads = UploadRegistry(
        maxConcurrent: service.settings.maxConcurrentUploads,
        perAccount: service.settings.maxConcurrentUploadsPerAccount)
    UploadController(service: service, uploads: uploads).addRoutes(to: router, protected: protected, table: table)
    let resumable = resumable ?? ResumableUploads(service: service, logger: logger ?? Logger(label: "moments"))
    ResumableUploadController(service: service, uploads: uploads, resumable: resumable).addRoutes(
        to: router, protected: protected, table: table)
    JobsController(service: service).addRoutes(to: protected, table: table)
    JobEditsController(service: service).addRoutes(to: protected, table: table)
    MediaLinksController(service: service).addRoutes(to: router, protected: protected, table: table)
    JobEventsController(service: service).addRoutes(to: protected, table: table)
    AccountController(service: service).addRoutes(to: protected, table: table)
    WebhookController(service: service).addRoutes(to: protected, table: table)
    DeviceController(service: service).addRoutes(to: protected, table: table)
    SubscriptionsController(service: service).addRoutes(to: router, protected: protected, table: table)
    return (router, table)
}
