import Foundation
import MediaVocabulary
import MomentsConfig
import Requests
import Store
import Telemetry

/// An account's plan now, what entitles it, and its usage this month.
public struct AccountPlan: Sendable {
    public var plan: Plan
    public var entitlement: Entitlement
    public var usage: QuotaUsage
    /// The plan that would lift this plan's limits (nil for pro).
    public var upgrade: Plan?
}

public struct QuotaUsage: Sendable, Equatable {
    public var limit: Int?
    public var used: Int
    public var remaining: Int?
    public var period: String
    public var resetsAt: Date
}

/// The plans' rules for an account: which plan it is on, its usage, and the refusals (with what
/// would lift them) when the month's quota, the jobs at once or the day's worker time are used up.
public struct PlanPolicy: Sendable {
    public let plans: PlanSettings
    let database: any JobRepository & SubscriptionRepository & UploadRepository & UsageRepository
    public let clock: @Sendable () -> Date

    public init(plans: PlanSettings, database: any JobRepository & SubscriptionRepository & UploadRepository & UsageRepository, clock: @escaping @Sendable () -> Date = { Date() }) {
        self.plans = plans
        self.database = database
        self.clock = clock
    }

    public func accountPlan(_ account: Account) async throws -> AccountPlan {
        let now = clock()
        let entitlement = try await database.entitlement(accountId: account.id, now: now)
        let plan = entitlement.grantsPro ? plans.pro : plans.free
        let period = UsagePeriod.month(of: now)
        let used = try await database.usedUnits(accountId: account.id, period: period.name)
        let usage = QuotaUsage(
            limit: plan.monthlyHighlights, used: used,
            remaining: plan.monthlyHighlights.map { max(0, $0 - used) }, period: period.name, resetsAt: period.resetsAt)
        return AccountPlan(
            plan: plan, entitlement: entitlement, usage: usage, upgrade: entitlement.grantsPro ? nil : plans.pro)
    }

    /// Before an upload streams: refuses at once when the month's quota is used up or the plan's
    /// jobs-at-once limit is reached, so nobody uploads a gigabyte to be told no. The accepting
    /// transaction checks both again.
    public func precheck(_ account: Account) async throws -> AccountPlan {
        try await precheck(account, uploadsInProgress: 0)
    }

    /// `precheck`, counting `uploadsInProgress` (the account's other bodies being received, not yet
    /// jobs) and its resumable uploads still receiving against the plan's jobs-at-once with its
    /// active jobs.
    public func precheck(_ account: Account, uploadsInProgress: Int) async throws -> AccountPlan {
        let current = try await accountPlan(account)
        let now = clock()
        let since = limits(current.entitlement.grantsPro).uploadsActiveSince(now)
        let uploadsInProgress =
            uploadsInProgress
            + (try await database.receivingUploads(accountId: account.id, now: now, activeSince: since))
        if let limit = current.usage.limit, current.usage.used >= limit {
            throw overQuota(limit: limit, used: current.usage.used, usage: current.usage, plan: current.plan)
        }
        let active = try await database.activeJobs(accountId: account.id)
        if active.count + uploadsInProgress >= current.plan.concurrentJobs {
            throw tooManyJobs(limit: current.plan.concurrentJobs, active: active, uploading: uploadsInProgress)
        }
        if let budget = current.plan.dailyWorkerSeconds {
            let spent = try await database.workerSecondsUsed(accountId: account.id, now: clock())
            if spent >= budget { throw overBudget(limit: budget, used: spent, plan: current.plan) }
        }
        return current
    }

    /// Refuses `quality=original` on a plan without it, naming the product that lifts it.
    public func check(quality: HighlightQuality, plan current: AccountPlan) throws(Refusal) {
        guard quality == .original, !current.plan.original else { return }
        QuotaMetrics.refused(.qualityNotInPlan)
        let product = current.upgrade?.original == true ? plans.proProductId : nil
        throw .originalQualityNotInPlan(plan: current.plan.name, upgradeProduct: product)
    }

    /// The plan's terms as the store's transactions apply them (pro or free, asked inside).
    public var limits: @Sendable (Bool) -> QuotaLimits {
        let (free, pro) = (plans.free, plans.pro)
        return { isPro in
            let plan = isPro ? pro : free
            return QuotaLimits(
                monthly: plan.monthlyHighlights, concurrent: plan.concurrentJobs,
                outputCap: plan.maxOutputSide, retentionHours: plan.retentionDays * 24,
                maxDurationSeconds: plan.maxDurationSeconds, dailyWorkerSeconds: plan.dailyWorkerSeconds,
                uploadIdleSeconds: plan.uploadIdleSeconds)
        }
    }

    /// The refusal for what a store transaction found over the plan's limits.
    public func refusal(_ refusal: QuotaRefusal, account: Account, plan current: AccountPlan) async -> Refusal {
        switch refusal {
        case .overQuota(let limit, let used):
            return overQuota(limit: limit, used: used, usage: current.usage, plan: current.plan)
        case .tooManyJobs(let limit, let busy):
            let active = (try? await database.activeJobs(accountId: account.id)) ?? []
            return tooManyJobs(limit: limit, active: active, uploading: max(0, busy - active.count))
        case .overBudget(let limit, let used):
            return overBudget(limit: limit, used: used, plan: current.plan)
        }
    }

    /// A file over `limit` bytes, naming the product that lifts the limit when one does.
    public func fileTooLarge(limit: Int64, plan current: AccountPlan) -> Refusal {
        var upgrade: (product: String, maxBytes: Int64)?
        if let pro = current.upgrade, pro.maxUploadBytes > limit { upgrade = (plans.proProductId, pro.maxUploadBytes) }
        return .fileTooLarge(.init(limit: limit, plan: current.plan.name, upgrade: upgrade))
    }

    /// Refused until the next UTC day: the plan's daily worker time is spent.
    public func overBudget(limit: Double, used: Double, plan: Plan) -> Refusal {
        QuotaMetrics.refused(.dailyBudgetExceeded)
        let next = UsagePeriod.day(of: clock()).next
        let retry = max(1, Int(next.timeIntervalSince(clock()).rounded(.up)))
        let product = plan.name == plans.free.name ? plans.proProductId : nil
        return .dailyBudgetExceeded(
            .init(
                limitSeconds: limit, usedSeconds: used, resetsAt: next, plan: plan.name,
                upgradeProduct: product, retryAfter: retry))
    }

    public func overQuota(limit: Int, used: Int, usage: QuotaUsage, plan: Plan) -> Refusal {
        QuotaMetrics.refused(.quotaExceeded)
        return .quotaExceeded(
            .init(
                limit: limit, used: used, resetsAt: usage.resetsAt, plan: plan.name,
                upgradeProduct: plan.name == plans.free.name ? plans.proProductId : nil))
    }

    public func tooManyJobs(limit: Int, active: [Job], uploading: Int = 0) -> Refusal {
        QuotaMetrics.refused(.tooManyJobs)
        let now = clock()
        let waits = active.map { job -> Double in
            let elapsed = job.startedAt.map { now.timeIntervalSince($0) } ?? 0
            return Double(job.estimatedSeconds) - elapsed
        }
        let retry = Int(min(600, max(5, waits.min() ?? 30)).rounded(.up))
        let proJobs = plans.pro.concurrentJobs
        return .tooManyJobs(
            .init(
                limit: limit, active: active.count, uploading: uploading, retryAfter: retry,
                product: plans.proProductId, upgradeJobs: limit < proJobs ? proJobs : nil))
    }
}
