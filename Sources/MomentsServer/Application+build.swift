import Foundation
import Hummingbird
import Jobs
import Logging
import MomentsConfig

/// Builds the HTTP application on a job service: routes, middleware, and the workers as a service
/// of the application (they start and stop with it).
public func buildApplication(service: JobService, logger: Logger) -> (app: some ApplicationProtocol, routes: RouteTable) {
    let (router, table) = buildRouter(service: service)
    let maxBody = service.settings.maxUploadBytes + 64 * 1024
    let app = Application(
        router: router,
        server: .http1(configuration: .init(additionalChannelHandlers: [UploadConnectionHandler(maxBodyBytes: maxBody)])),
        configuration: .init(address: .hostname(service.settings.host, port: service.settings.port), serverName: "Moments"),
        services: [service.runner],
        logger: logger)
    return (app, table)
}

/// The router alone (tests drive it with `.router`).
public func buildRouter(service: JobService) -> (Router<AppRequestContext>, RouteTable) {
    let router = Router(context: AppRequestContext.self)
    let table = RouteTable()
    router.add(middleware: ProblemMiddleware())
    let protected = router.group().add(middleware: APIKeyMiddleware(service: service))

    HealthController(service: service).addRoutes(to: router, table: table)
    OpenAPIController().addRoutes(to: router, table: table)
    AccountsController(service: service, limiter: CreationLimiter(perHour: service.settings.accountsPerAddressPerHour))
        .addRoutes(to: router, table: table)
    UploadController(service: service).addRoutes(to: router, protected: protected, table: table)
    JobsController(service: service).addRoutes(to: protected, table: table)
    AccountController(service: service).addRoutes(to: protected, table: table)
    SubscriptionsController(service: service).addRoutes(to: router, protected: protected, table: table)
    return (router, table)
}
