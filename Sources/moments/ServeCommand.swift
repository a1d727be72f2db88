import ArgumentParser
import Configuration
import Foundation
import Isolation
import JobMedia
import Logging
import ServiceLifecycle
import MomentsConfig
import MomentsServer

/// `moments serve`: the HTTP service with its workers, until SIGTERM or SIGINT.
struct ServeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "serve",
        abstract: "Run the HTTP service (upload, status, download, cancel) and its job workers.",
        discussion:
            "Settings come from Config/moments.json (or MOMENTS_CONFIG) and environment variables such as HTTP_HOST, HTTP_PORT, STORAGE_PATH, JOBS_WORKERS, DATABASE_URL; options given here win."
    )

    @Option(help: "Address to listen on (default 127.0.0.1).") var host: String?
    @Option(help: "Port to listen on (default 8000).") var port: Int?
    @Option(help: "Storage folder: database, uploads, results (default Storage).") var storage: String?
    @Option(help: "Log level: trace, debug, info, notice, warning, error, critical.") var logLevel: String?

    @Option(
        help:
            "Jobs processed at the same time by this process; 0 runs the API only (default jobs.workers / JOBS_WORKERS)."
    ) var workers: Int?

    func run() async throws {
        let context = try await ProcessContext.load(storage: storage, logLevel: logLevel)
        // Before anything else: the environment holds credentials.
        IsolatedChild.protectServerProcess(logger: context.logger)
        var settings = context.settings
        if let host { settings.host = host }
        if let port { settings.port = port }
        if let workers {
            guard workers >= 0 else { throw ValidationError("--workers cannot be negative") }
            settings.workers = workers
        }
        let logger = context.logger
        let services = try await context.openServices(settings)
        logger.notice(
            "Moments starting",
            metadata: [
                "url": "\(settings.baseURL)", "storage": "\(settings.storagePath)",
                "database": "\(services.store.engine)", "workers": "\(settings.workers)"
            ])
        let (app, _) = buildApplication(services, logger: logger, operations: OperationsSettings(reader: context.config))
        // The composition root: the store (PostgreSQL's pool and listener), the start-up work, the
        // background services and the HTTP application as siblings in one group, stopped in reverse
        // order on SIGTERM or SIGINT: the app first, the workers next, the start-up work's lock and
        // the store last.
        // The app answers once the start-up work is done (no upload arrives while interrupted
        // ones are cleared away).
        let group = processGroup(
            (storeServices(services.store) + services.background(for: .api) + [services.startup.then(app)]).map {
                .init(service: $0)
            },
            logger: logger)
        do {
            try await group.run()
        } catch let error as StorageLockError {
            context.fail("cannot use the storage at \(settings.storagePath): \(error)")
        }
        try await services.store.close()
        logger.notice("Moments stopped; database closed")
    }
}
