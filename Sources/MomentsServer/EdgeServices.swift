import Accounts
import Foundation
import JobMedia
import MediaVocabulary
import MomentsConfig
import Requests
import Store
import Uploads
import Webhooks
import Workers

/// The service's parts the HTTP edge uses, handed in by the composition root (`Sources/moments`):
/// each controller takes what it needs from here.
public struct EdgeServices: Sendable {
    public var settings: ServiceSettings
    /// The crossfade between segments (seconds), as timelines show it.
    public var crossfadeSeconds: Double
    /// What this server accepts (GET /api/v1/upload/formats).
    public var formats: FormatCatalog
    public var store: any MomentsStore
    public var accounts: AccountService
    public var policy: PlanPolicy
    public var appStore: AppStoreGate
    public var intake: UploadIntake
    public var resumable: ResumableUploads
    public var jobs: JobControl
    public var links: MediaLinkSigner
    public var readiness: Readiness
    public var webhooks: WebhookDispatcher
    /// Whether pushes are on (an APNs key is configured): devices may register.
    public var pushEnabled: Bool
    public var clock: @Sendable () -> Date

    public init(
        settings: ServiceSettings, crossfadeSeconds: Double, formats: FormatCatalog, store: any MomentsStore,
        accounts: AccountService, policy: PlanPolicy, appStore: AppStoreGate, intake: UploadIntake,
        resumable: ResumableUploads, jobs: JobControl, links: MediaLinkSigner, readiness: Readiness,
        webhooks: WebhookDispatcher, pushEnabled: Bool, clock: @escaping @Sendable () -> Date
    ) {
        self.settings = settings; self.crossfadeSeconds = crossfadeSeconds; self.formats = formats
        self.store = store; self.accounts = accounts; self.policy = policy; self.appStore = appStore
        self.intake = intake; self.resumable = resumable; self.jobs = jobs; self.links = links
        self.readiness = readiness; self.webhooks = webhooks; self.pushEnabled = pushEnabled; self.clock = clock
    }
}
