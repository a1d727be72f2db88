import Highlight
import MediaConfig
import Analysis
import ArgumentParser
import Configuration
import Foundation
import Isolation
import JobMedia
import Logging
import MomentsConfig
import HTTPEdge  // the worker's /metrics endpoint (HTTP)
import Push
import ServiceLifecycle
import Store
import Telemetry
import Workers

/// `moments worker`: job workers without the HTTP API, on a store shared with the API processes
/// (PostgreSQL) — any number of them, on any hosts. SIGTERM or SIGINT: running jobs are handed
/// back to the queue (without counting the attempt) and the process exits.
struct WorkerCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "worker",
        abstract: "Process highlight jobs from the shared queue (no HTTP API).",
        discussion:
            "Needs a shared database: DATABASE_URL=postgres://… (and, across hosts, shared media storage: STORAGE_BACKEND=s3). Settings come from Config/moments.json and the environment; options given here win."
    )

    @Option(help: "Jobs processed at the same time (default jobs.workers / JOBS_WORKERS).") var workers: Int?
    @Option(help: "Local folder for scratch files and the analysis cache (default storage.path / STORAGE_PATH).")
    var storage: String?
    @Option(help: "Log level: trace, debug, info, notice, warning, error, critical.") var logLevel: String?

    func run() async throws {
        let context = try await ProcessContext.load(storage: storage, logLevel: logLevel)
        // Before anything else: the environment holds credentials.
        IsolatedChild.protectServerProcess(logger: context.logger)
        var settings = context.settings
        if let workers { settings.workers = workers }
        guard settings.workers > 0 else { throw ValidationError("--workers must be at least 1") }
        guard case .postgresql = StoreLocation(settings.databaseURL, storagePath: settings.storagePath) else {
            context.fail(
                "a worker process shares the queue through PostgreSQL: set DATABASE_URL=postgres://… (with the embedded SQLite, `moments serve` runs the workers itself)"
            )
        }
        let services = try await context.openServices(settings)
        let logger = context.logger
        logger.notice(
            "Moments worker started",
            metadata: ["workers": "\(settings.workers)", "database": "\(services.store.engine)"])
        let sampler = QueueSampler(store: services.store)
        let metrics = workerMetricsService(
            OperationsSettings(reader: context.config), host: settings.host, logger: logger
        ) { await sampler.refresh() }
        let group = processGroup(
            (storeServices(services.store) + services.background(for: .worker)).map { .init(service: $0) }
                + (metrics.map { [$0] } ?? []), logger: logger)
        try await group.run()
        try await services.store.close()
        logger.notice("Moments worker stopped; its jobs were finished or handed back")
    }
}

/// A process's ServiceGroup: graceful shutdown on SIGTERM or SIGINT, in reverse start order. A
/// shutdown that has not ended after `shutdownSeconds` (a service that missed it) becomes
/// cancellation, so the process always ends: its jobs were handed back at the shutdown's start.
func processGroup(_ services: [ServiceGroupConfiguration.ServiceConfiguration], logger: Logger) -> ServiceGroup {
    var configuration = ServiceGroupConfiguration(
        services: services, gracefulShutdownSignals: [.sigterm, .sigint], logger: logger)
    configuration.maximumGracefulShutdownDuration = .seconds(shutdownSeconds)
    return ServiceGroup(configuration: configuration)
}

/// How long a graceful shutdown may take before it becomes cancellation: the children's SIGTERM
/// and SIGKILL (3 s), the jobs handed back (store writes retried for up to 15 s), the answers in
/// flight, with room to spare.
let shutdownSeconds: Int64 = 45

/// The store, when it is a service of its own (PostgreSQL: its pool and event listener).
func storeServices(_ store: any MomentsStore) -> [any Service] {
    (store as? any Service).map { [$0] } ?? []
}


/// What `serve` and `worker` share: configuration, logger, the store and the service's parts.
struct ProcessContext {
    var config: ConfigReader
    var settings: ServiceSettings
    var media: MediaDefaults
    var logger: Logger

    static func load(storage: String?, logLevel: String?) async throws -> ProcessContext {
        let config: ConfigReader
        do {
            config = try await MomentsConfiguration.reader()
        } catch {
            FileHandle.standardError.write(Data("moments: \(error)\n".utf8))
            throw ExitCode.failure
        }
        var settings = ServiceSettings(reader: config)
        if let storage { settings.storagePath = storage }
        if let problem = Self.targetRangeProblem(settings) {
            FileHandle.standardError.write(Data("moments: \(problem)\n".utf8))
            throw ExitCode.failure
        }
        let operations = OperationsSettings(reader: config)
        LogOutput.bootstrap(json: operations.logFormat == .json)
        var logger = Logger(label: "moments")
        let level = logLevel ?? operations.logLevel
        logger.logLevel = Logger.Level(rawValue: level) ?? .info
        let file = MomentsConfiguration.fileInUse()
        if file.exists {
            logger.info("configuration: \(file.path) and the environment")
        } else {
            logger.warning(
                "configuration: no file at \(file.path) (it is looked for from the working directory, or set MOMENTS_CONFIG): built-in defaults and the environment"
            )
        }
        let media = MediaDefaults(reader: config)
        let faces = media.template.analysis.faces
        if faces.enabled, let why = FaceDetector.load(faces.library) {
            // The service still works: highlights are then chosen, and cropped, without seeing people.
            logger.error(
                "Faces are unavailable: \(why). Highlights will not prefer people and crops will not keep faces; run scripts/install-facedetect (make setup does), or set media.analysis.faces to false to silence this."
            )
        }
        if settings.serverSecret.isEmpty && settings.databaseURL.hasPrefix("postgres") {
            // Each host would make its own: links signed on one would not open on another, and
            // webhook secrets sealed by one would not be opened by another's deliveries.
            logger.error(
                "security.serverSecret (SECURITY_SERVER_SECRET) is not set while processes share PostgreSQL: set the same secret of 32 characters or more on every process; this one uses the storage's own, which no other host has"
            )
        }
        let allowed = Set(settings.allowWeakerIsolation.compactMap(IsolationLayer.init(rawValue:)))
        if let problem = IsolationLayer.problem(allowing: allowed) {
            // The process still starts (its API answers, /ready says not ready): no upload is
            // parsed and no job runs until the operator completes the sandbox.
            logger.error("\(problem)")
        } else if !allowed.isEmpty {
            logger.warning(
                "children may start without these sandbox layers (isolation.allowWeaker): \(allowed.map(\.rawValue).sorted())")
        }
        return ProcessContext(config: config, settings: settings, media: media, logger: logger)
    }

    /// The accepted target_duration range must be one the engine makes (else every job would
    /// fail inside its child): said at start-up instead.
    static func targetRangeProblem(_ s: ServiceSettings) -> String? {
        let (low, high) = (Int(HighlightEngine.minTarget), Int(HighlightEngine.maxTarget))
        guard s.minTargetDuration < low || s.maxTargetDuration > high || s.minTargetDuration > s.maxTargetDuration
            || !(s.minTargetDuration...max(s.minTargetDuration, s.maxTargetDuration)).contains(s.defaultTargetDuration)
        else { return nil }
        return
            "upload.minTargetDuration, upload.maxTargetDuration and upload.defaultTargetDuration (\(s.minTargetDuration), \(s.maxTargetDuration), \(s.defaultTargetDuration)) must lie within the \(low) to \(high) seconds highlights are made in, the minimum no more than the default and the default no more than the maximum"
    }

    func fail(_ message: String) -> Never {
        FileHandle.standardError.write(Data("moments: \(message)\n".utf8))
        Foundation.exit(1)
    }

    /// Opens the store `settings.databaseURL` names and builds the service's parts on it.
    func openServices(_ settings: ServiceSettings) async throws -> MomentsServices {
        let appStore = AppStoreSettings(reader: config)
        let location = StoreLocation(settings.databaseURL, storagePath: settings.storagePath)
        do {
            let store = try await StoreOpener.open(location, sandboxForAll: appStore.sandboxForAll, logger: logger)
            return try MomentsServices(
                settings: settings, media: media, plans: PlanSettings(reader: config), appStore: appStore,
                store: store, logger: logger)
        } catch let error as APNsConfigurationError {
            fail("\(error)")
        } catch {
            fail("cannot open the store (\(location.redacted)) or the storage at \(settings.storagePath): \(error)")
        }
    }
}
