import Foundation
import JobStore

/// Admission of uploads against the plan, in the store (JobStore's UploadAdmission.swift): a
/// resumable upload's row and a plain upload's place are inserted in the transaction that checks
/// the month's quota, jobs at once (active jobs, uploads still receiving, plain uploads being
/// received) and the day's worker time, so parallel requests of one account cannot all pass.
extension JobService {
    /// The plan's terms as the store's transactions apply them (pro or free, asked inside).
    var planLimits: @Sendable (Bool) -> QuotaLimits {
        let (free, pro) = (plans.free, plans.pro)
        return { isPro in
            let plan = isPro ? pro : free
            return QuotaLimits(monthly: plan.monthlyHighlights, concurrent: plan.concurrentJobs,
                               outputCap: plan.maxOutputSide, retentionHours: plan.retentionDays * 24,
                               maxDurationSeconds: plan.maxDurationSeconds, dailyWorkerSeconds: plan.dailyWorkerSeconds)
        }
    }

    /// Inserts a resumable upload after the plan's checks, in one transaction; a refusal is the
    /// same 402/429 a plain upload gets.
    public func createAdmitted(_ upload: ResumableUpload, account: Account, plan current: AccountPlan) async throws -> ResumableUpload {
        switch try await database.createUpload(upload, now: clock(), limits: planLimits) {
        case .success(let upload): return upload
        case .failure(let refusal): throw await rejection(refusal, account: account, plan: current)
        }
    }

    /// How long a plain upload's place lasts unless renewed (its request renews it while the body
    /// arrives; a process that died frees it within this).
    public static let uploadAdmissionSeconds = 120.0

    /// Takes a plain upload's place (`id`) against the plan, in one transaction.
    public func admitUpload(id: String, account: Account, plan current: AccountPlan) async throws {
        let now = clock()
        switch try await database.admitUpload(id: id, accountId: account.id, until: now.addingTimeInterval(Self.uploadAdmissionSeconds),
                                              now: now, limits: planLimits) {
        case .success: return
        case .failure(let refusal): throw await rejection(refusal, account: account, plan: current)
        }
    }

    /// Keeps a plain upload's place while its body arrives.
    public func renewUploadAdmission(id: String) async {
        try? await database.renewUploadAdmission(id: id, until: clock().addingTimeInterval(Self.uploadAdmissionSeconds))
    }

    /// Gives a plain upload's place back (its file became a job, was refused, or the request ended).
    public func releaseUploadAdmission(id: String) async {
        try? await database.releaseUploadAdmission(id: id)
    }

    func rejection(_ refusal: QuotaRefusal, account: Account, plan current: AccountPlan) async -> UploadRejection {
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
}
