import Accounts
import Highlight
import HighlightJob
import MediaEngine
import Foundation
import JobMedia
import Logging
import MomentsConfig
import Push
import ServiceLifecycle
import Store
import Uploads
import Webhooks
import Workers

/// The service's parts, built once and wired as siblings on one store and one media storage:
/// accounts and plans, the upload intake, the workers and job control, signed media links,
/// readiness, and the webhook and push dispatchers. The HTTP application takes what each
/// controller needs from here; `background` is what runs beside it in the process's ServiceGroup.
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
    /// Held for the life of the service: one process per storage folder (SQLite only).
    let lock: StorageLock?

    /// Creates the storage folders, takes the storage lock when the store is exclusive (SQLite),
    /// opens the media storage (`mediaStorage`, or the one `storage.backend` names; `probe` replaces
    /// the isolated probe of uploads, for router tests), reads the APNs
    /// key (a bad one stops the start: `APNsConfigurationError`), and recovers the jobs a crash
    /// interrupted.
    public init(
        settings: ServiceSettings, media: MediaDefaults, plans: PlanSettings = PlanSettings(),
        appStore: AppStoreSettings = AppStoreSettings(), store: any MomentsStore,
        mediaStorage: (any MediaStorage)? = nil, probe: (any UploadProbe)? = nil, logger: Logger,
        clock: @escaping @Sendable () -> Date = { Date() }
    ) throws {
        let layout = StorageLayout(root: settings.storagePath)
        try layout.prepare()
        // One process per storage folder when the store is the embedded SQLite (it has no leases
        // to tell another process's jobs from orphans); a shared store has no such limit.
        lock = store.isExclusive ? try StorageLock(layout.path(".lock")) : nil
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
        try runner.recoverAtStartup()
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

    /// What runs beside the HTTP application (in `serve`; `worker` runs the same without the
    /// resumable uploads' sweeper), in start order: a ServiceGroup stops them in reverse, so the
    /// workers finish or hand back their jobs before the dispatchers stop.
    public var background: [any Service] {
        var services: [any Service] = [webhooks]
        if let pushes { services.append(pushes) }
        services.append(runner)
        services.append(ResumableUploadSweeper(uploads: resumable, intervalSeconds: settings.sweepIntervalSeconds))
        return services
    }
}
