import Foundation
import HTTPEdge
import Hummingbird
import HummingbirdCore
import Logging
import MomentsConfig
import ServiceLifecycle
import Workers

/// Builds the HTTP application on the service's parts: routes, middleware, the transport limits of
/// `ServiceSettings` (connections, header and idle timeouts, body rate). `background` runs as
/// services of the application (they start and stop with it): the tests pass the root's
/// background services; `moments serve` runs those in its own ServiceGroup beside the app.
public func buildApplication(
    _ services: EdgeServices, logger: Logger, operations: OperationsSettings = OperationsSettings(),
    background: [any Service] = []
) -> (app: some ApplicationProtocol, routes: RouteTable) {
    let (router, table) = buildRouter(services, logger: logger, operations: operations)
    let settings = services.settings
    let server = HTTPServerBuilder.guardedHTTP1(
        counter: ConnectionCounter(limit: settings.maxConnections),
        headerTimeoutSeconds: settings.headerTimeoutSeconds, idleTimeoutSeconds: settings.idleTimeoutSeconds,
        minBytesPerSecond: settings.minUploadBytesPerSecond, stallSeconds: settings.uploadStallSeconds, logger: logger)
    let app = Application(
        router: router,
        server: server,
        configuration: .init(address: .hostname(settings.host, port: settings.port), serverName: "Moments"),
        services: background,
        logger: logger)
    return (app, table)
}

/// The router alone (tests drive it with `.router`): each controller gets the parts it uses.
public func buildRouter(
    _ services: EdgeServices, logger: Logger? = nil, operations: OperationsSettings = OperationsSettings()
) -> (Router<AppRequestContext>, RouteTable) {
    let router = Router(context: AppRequestContext.self)
    let table = RouteTable()
    let settings = services.settings
    router.add(middleware: HTTPMetricsMiddleware())
    router.add(middleware: RequestIDMiddleware())
    router.add(middleware: ProblemMiddleware())
    // Before any route's own work (the sign-up allowance, a key lookup): a page of another site
    // cannot change anything here through its visitors' browsers.
    router.add(middleware: CrossSiteGuard(baseURL: settings.baseURL))
    let protected = router.group().add(middleware: APIKeyMiddleware(accounts: services.accounts))
    let keyed = router.group().add(middleware: APIKeyMiddleware(accounts: services.accounts, optional: true))

    let addresses = ClientAddressResolver(trustedProxies: settings.trustedProxies)
    if !addresses.invalid.isEmpty {
        logger?.error(
            "http.trustedProxies: entries that are not an address or CIDR range are ignored",
            metadata: ["entries": "\(addresses.invalid)"])
    }
    HealthController(readiness: services.readiness, cacheSeconds: settings.readyCacheSeconds)
        .addRoutes(to: router, table: table)
    OpenAPIController().addRoutes(to: router, table: table)
    StudioController().addRoutes(to: router, table: table)
    let queueSampler = QueueSampler(store: services.store)
    MetricsController(token: operations.metricsToken, refresh: { await queueSampler.refresh() }).addRoutes(
        to: router, table: table)
    AccountsController(
        accounts: services.accounts, store: services.store, clock: services.clock,
        limiter: CreationLimiter(perHour: settings.accountsPerAddressPerHour), addresses: addresses
    )
    .addRoutes(to: router, table: table)
    let uploads = UploadRegistry(
        maxConcurrent: settings.maxConcurrentUploads, perAccount: settings.maxConcurrentUploadsPerAccount)
    UploadController(intake: services.intake, settings: settings, uploads: uploads, catalog: services.formats)
        .addRoutes(keyed: keyed, protected: protected, table: table)
    ResumableUploadController(
        intake: services.intake, accounts: services.accounts, settings: settings, uploads: uploads,
        resumable: services.resumable
    )
    .addRoutes(to: router, protected: protected, table: table)
    JobsController(jobs: services.jobs, baseURL: settings.baseURL).addRoutes(to: protected, table: table)
    JobEditsController(
        jobs: services.jobs, intake: services.intake, crossfadeSeconds: services.crossfadeSeconds,
        baseURL: settings.baseURL)
        .addRoutes(to: protected, table: table)
    MediaLinksController(jobs: services.jobs, links: services.links, baseURL: settings.baseURL)
        .addRoutes(to: router, protected: protected, table: table)
    JobEventsController(
        jobs: services.jobs, accounts: services.accounts, settings: settings,
        storeEvents: { [store = services.store] in store.events() })
        .addRoutes(to: protected, table: table)
    AccountController(policy: services.policy, keys: services.store).addRoutes(to: protected, table: table)
    WebhookController(jobs: services.jobs, endpoints: services.store, webhooks: services.webhooks, clock: services.clock)
        .addRoutes(to: protected, table: table)
    DeviceController(
        devices: services.store, settings: settings.push, pushEnabled: services.pushEnabled, clock: services.clock
    )
    .addRoutes(to: protected, table: table)
    SubscriptionsController(appStore: services.appStore, policy: services.policy, subscriptions: services.store)
        .addRoutes(to: router, protected: protected, table: table)
    return (router, table)
}
