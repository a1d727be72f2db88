import Accounts
import Highlight
import HighlightJob
import MediaEngine
import Foundation
import JobMedia
import Hummingbird
import Logging
import MomentsConfig
import Push
import ServiceLifecycle
import HTTPEdge
import MomentsServer
import Store
import Uploads
import Webhooks
import Workers

/// The composition root: the service's parts, built once and wired as siblings on one store and
/// one media storage: accounts and plans, the upload intake, the workers and job control (with
/// the job's media side, `HighlightJobs`), signed media links, readiness, and the webhook and push
/// dispatchers. The HTTP edge takes its parts from `edge`; `background(for:)` is what runs beside
/// it (or alone, in a worker process) in the process's ServiceGroup.
public struct MomentsServices: Sendable {
    public let settings: ServiceSettings
    public let media: MediaDefaults
    /// What this server accepts, asked of the linked FFmpeg once (GET /api/v1/upload/formats).
    public let formats = FormatCatalog.current()
    public let store: any MomentsStore
    public let layout: StorageLayout
    public let mediaStorage: any MediaStorage
    public let accounts: AccountService
    public let policy: PlanPolicy
    public let appStore: AppStoreGate
    public let intake: UploadIntake
    public let resumable: ResumableUploads
    public let runner: JobRunner
    public let jobs: JobControl
    public let links: MediaLinkSigner
    /// Signs media links and seals webhook secrets (`security.serverSecret`, else the storage's file).
    public let serverSecret: ServerSecret
    public let readiness: Readiness
    public let webhooks: WebhookDispatcher
    /// Nil when no APNs key is configured: pushes are off.
    public let pushes: PushDispatcher?
    public let clock: @Sendable () -> Date
    /// The start-up work (the storage's folders, its lock, the recovery of interrupted jobs): the
    /// first service of a process's group; the others start after it (`background(for:)`,
    /// `startup.then(app)`). Tests do it at once with `startup.perform()`.
    public let startup: StartupWork

    /// Builds the parts: opens the media storage (`mediaStorage`, or the one `storage.backend`
    /// names; `probe` replaces the isolated probe of uploads, for router tests), reads the server
    /// secret and the APNs key (a bad one stops the start: `APNsConfigurationError`). Nothing runs
    /// yet: the folders, the lock and the recovery are `startup`'s.
    public init(
        settings: ServiceSettings, media: MediaDefaults, plans: PlanSettings = PlanSettings(),
        appStore: AppStoreSettings = AppStoreSettings(), store: any MomentsStore,
        mediaStorage: (any MediaStorage)? = nil, probe: (any UploadProbe)? = nil, logger: Logger,
        clock: @escaping @Sendable () -> Date = { Date() }
    ) throws {
        let layout = StorageLayout(root: settings.storagePath)
        let mediaStorage =
            try mediaStorage ?? MediaStorageFactory.make(settings: settings, layout: layout, logger: logger)
        (self.settings, self.media, self.store, self.layout, self.clock) = (settings, media, store, layout, clock)
        self.mediaStorage = mediaStorage
        self.appStore = AppStoreGate(appStore, logger: logger)
        accounts = AccountService(database: store, clock: clock)
        policy = PlanPolicy(plans: plans, database: store, clock: clock)
        runner = JobRunner(
            database: store, layout: layout, mediaStorage: mediaStorage, settings: settings,
            highlights: HighlightJobs(
                media: media, database: store, layout: layout, mediaStorage: mediaStorage, clock: clock),
            plans: plans, logger: logger, clock: clock)
        intake = UploadIntake(
            database: store, layout: layout, mediaStorage: mediaStorage, settings: settings, policy: policy,
            isolation: runner.isolation, probe: probe, logger: logger, clock: clock)
        resumable = ResumableUploads(intake: intake, logger: logger)
        jobs = JobControl(database: store, mediaStorage: mediaStorage, runner: runner, clock: clock)
        let secret = try ServerSecret.load(configured: settings.serverSecret, file: layout.path("server.secret"))
        serverSecret = secret
        links = MediaLinkSigner(database: store, secret: secret, clock: clock)
        readiness = Readiness(
            store: store, layout: layout, mediaStorage: mediaStorage, settings: settings, clock: clock)
        webhooks = WebhookDispatcher(
            database: store, settings: settings.webhooks, baseURL: settings.baseURL,
            worker: "\(runner.processTag)#webhooks", secret: secret, logger: logger, clock: clock)
        pushes = try Self.pushDispatcher(settings, store: store, worker: "\(runner.processTag)#pushes", logger, clock)
        startup = StartupWork(layout: layout, exclusive: store.isExclusive, runner: runner)
    }

    static func pushDispatcher(
        _ settings: ServiceSettings, store: any MomentsStore, worker: String, _ logger: Logger,
        _ clock: @escaping @Sendable () -> Date
    ) throws -> PushDispatcher? {
        guard let apns = try APNsCredentials.load(settings.push) else {
            logger.notice("Push notifications are off", metadata: ["reason": "no APNs key (APNS_KEY_PATH)"])
            return nil
        }
        return PushDispatcher(
            database: store, client: APNsClient(credentials: apns), settings: settings.push, worker: worker,
            logger: logger, clock: clock)
    }

    /// The parts the HTTP edge uses.
    public var edge: EdgeServices {
        EdgeServices(
            settings: settings, crossfadeSeconds: media.crossfadeSeconds, formats: formats, store: store,
            accounts: accounts, policy: policy, appStore: appStore, intake: intake, resumable: resumable, jobs: jobs,
            links: links, readiness: readiness, webhooks: webhooks, pushEnabled: pushes != nil, clock: clock)
    }

    /// Which process the background services are for.
    public enum ProcessRole: Sendable {
        /// `moments serve`: the API (it holds resumable uploads' bytes) and its workers.
        case api
        /// `moments worker`: the workers alone.
        case worker
    }

    /// What runs beside the HTTP application, in start order: the start-up work first, the others
    /// once it is done. A ServiceGroup stops them in reverse, so the workers finish or hand back
    /// their jobs before the dispatchers stop, and the storage lock is let go last. A worker
    /// process has no resumable uploads to sweep.
    public func background(for role: ProcessRole) -> [any Service] {
        var services: [any Service] = [webhooks]
        if let pushes { services.append(pushes) }
        services.append(runner)
        if role == .api {
            services.append(ResumableUploadSweeper(uploads: resumable, intervalSeconds: settings.sweepIntervalSeconds))
        }
        return [startup] + services.map(startup.then)
    }

    /// The API process's background services (`background(for: .api)`).
    public var background: [any Service] { background(for: .api) }
}

/// The HTTP application on the root's parts (`MomentsServer.buildApplication` over `edge`).
public func buildApplication(
    _ services: MomentsServices, logger: Logger, operations: OperationsSettings = OperationsSettings(),
    background: [any Service] = []
) -> (app: some ApplicationProtocol, routes: RouteTable) {
    MomentsServer.buildApplication(services.edge, logger: logger, operations: operations, background: background)
}

/// The router alone on the root's parts, for tests driving it with `.router`.
public func buildRouter(
    _ services: MomentsServices, logger: Logger? = nil, operations: OperationsSettings = OperationsSettings()
) -> (Router<AppRequestContext>, RouteTable) {
    MomentsServer.buildRouter(services.edge, logger: logger, operations: operations)
}
