import Configuration
import Foundation

/// A plan's limits. Every limit is checked before a job is accepted; the size limit also while
/// the upload streams.
public struct Plan: Sendable, Equatable {
    public var name: String
    /// Highlights per calendar month (UTC); nil = no cap.
    public var monthlyHighlights: Int?
    public var maxUploadBytes: Int64
    public var maxDurationSeconds: Double
    /// Largest shorter side of the output (1080 = 1080p, 2160 = 2160p).
    public var maxOutputSide: Int
    /// Jobs pending or processing at once.
    public var concurrentJobs: Int
    /// Results are kept this long after the job finished.
    public var retentionDays: Double
    /// Worker seconds an account may use per UTC day, charged whatever a job's outcome (a failure
    /// the service caused is not charged); nil = no budget.
    public var dailyWorkerSeconds: Double? = nil
    /// Re-cuts of a finished highlight allowed (another length, shape or moments from the kept
    /// input and analysis, no new upload). Each re-cut counts as one highlight against
    /// `monthlyHighlights`, like an upload. When allowed, inputs are kept for `retentionDays`.
    public var recuts: Bool = true
    /// Bytes of uploaded videos an account may keep for re-cuts (the sum of its kept inputs). When
    /// a highlight is made, the account's oldest kept inputs are released (deleted early: their
    /// re-cuts answer 410) until the rest fit; an input larger than this is not kept at all.
    /// A recognised re-upload of a kept video keeps one copy (the newest) for both jobs.
    public var keptInputBytes: Int64 = 10 << 30
    /// `quality=original` allowed: the source's own coded pictures, copied, up to `maxOutputSide`
    /// (a larger video is encoded at that size).
    public var original = false
    /// A resumable upload that has received nothing for this many minutes stops counting against
    /// `concurrentJobs` (a phone that lost its connection does not lock the account out until the
    /// upload expires); it may still resume while it exists, if a place is free then. 0: it counts
    /// until it expires.
    public var uploadIdleMinutes: Double = 15

    /// `uploadIdleMinutes` in seconds; nil when idle uploads keep their place.
    public var uploadIdleSeconds: Double? { uploadIdleMinutes > 0 ? uploadIdleMinutes * 60 : nil }
}

/// `plans.free.*` and `plans.pro.*` in Config/moments.json (env: PLANS_FREE_MONTHLY_HIGHLIGHTS, …).
/// A `monthlyHighlights` of 0 means no cap (pro's optional fair-use cap is a positive number); so
/// does a `dailyWorkerSeconds` of 0.
public struct PlanSettings: Sendable, Equatable {
    public var free = Plan(
        name: "free", monthlyHighlights: 3, maxUploadBytes: 1 << 30, maxDurationSeconds: 600,
        maxOutputSide: 1080, concurrentJobs: 1, retentionDays: 7, dailyWorkerSeconds: 1800, keptInputBytes: 2 << 30)
    public var pro = Plan(
        name: "pro", monthlyHighlights: nil, maxUploadBytes: 4 << 30, maxDurationSeconds: 3600,
        maxOutputSide: 2160, concurrentJobs: 3, retentionDays: 30, dailyWorkerSeconds: 28800, keptInputBytes: 50 << 30,
        original: true, uploadIdleMinutes: 60)
    /// The App Store product that grants pro.
    public var proProductId = "com.moments.pro.monthly"

    public init() {}

    public init(reader config: ConfigReader) {
        let plans = config.scoped(to: "plans")
        free = Self.read(plans.scoped(to: "free"), defaults: free)
        pro = Self.read(plans.scoped(to: "pro"), defaults: pro)
        plans.scoped(to: "pro").read("productId", into: &proProductId)
    }

    static func read(_ r: ConfigReader, defaults: Plan) -> Plan {
        var plan = defaults
        // 0 in the file (or no cap by default) means no cap.
        var monthly = plan.monthlyHighlights ?? 0, budget = plan.dailyWorkerSeconds ?? 0
        r.read("monthlyHighlights", into: &monthly)
        r.read("dailyWorkerSeconds", into: &budget)
        plan.monthlyHighlights = monthly > 0 ? monthly : nil
        plan.dailyWorkerSeconds = budget > 0 ? budget : nil
        r.read("maxUploadBytes", into: &plan.maxUploadBytes)
        r.read("maxDurationSeconds", into: &plan.maxDurationSeconds)
        r.read("maxOutputSide", into: &plan.maxOutputSide)
        r.read("concurrentJobs", into: &plan.concurrentJobs, in: 1...Int.max)
        r.read("retentionDays", into: &plan.retentionDays)
        r.read("recuts", into: &plan.recuts)
        r.read("keptInputBytes", into: &plan.keptInputBytes, in: 0...Int64.max)
        r.read("original", into: &plan.original)
        r.read("uploadIdleMinutes", into: &plan.uploadIdleMinutes, in: 0...Double.greatestFiniteMagnitude)
        return plan
    }

    public func plan(named name: String) -> Plan { name == "pro" ? pro : free }
}

/// `appStore.*`: what StoreKit payloads must match, and the Apple root certificates they must
/// chain to (DER or PEM files; paths relative to the working directory).
public struct AppStoreSettings: Sendable, Equatable {
    public var bundleId = "com.moments.app"
    /// Accepted environments: "Production"; add "Sandbox" for App Review, TestFlight and Xcode
    /// builds (Apple's reviewers buy in the sandbox against the production server).
    public var environments = ["Production", "Sandbox"]
    public var rootCertificates: [String] = ["Config/AppleRootCA-G3.cer"]
    /// `appStore.sandboxForAll` / APP_STORE_SANDBOX_FOR_ALL: sandbox (TestFlight, App Review, Xcode)
    /// subscriptions grant pro to every account. Off: only to accounts an operator marked as
    /// testers (`moments accounts tester ID --on`); other accounts presenting one get a 403
    /// (turn this on while a build is in App Review, or mark the reviewer's account).
    public var sandboxForAll = false

    public init() {}

    public init(reader config: ConfigReader) {
        let appStore = config.scoped(to: "appStore")
        appStore.read("bundleId", into: &bundleId)
        appStore.read("environments", into: &environments)
        appStore.read("rootCertificates", into: &rootCertificates)
        appStore.read("sandboxForAll", into: &sandboxForAll)
    }
}
