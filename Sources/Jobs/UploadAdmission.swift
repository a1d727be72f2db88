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
            return QuotaLimits(
                monthly: plan.monthlyHighlights, concurrent: plan.concurrentJobs,
                outputCap: plan.maxOutputSide, retentionHours: plan.retentionDays * 24,
                maxDurationSeconds: plan.maxDurationSeconds, dailyWorkerSeconds: plan.dailyWorkerSeconds)
        }
    }

    /// Inserts a resumable upload after the plan's checks, in one transaction; a refusal is the
    /// same one a plain upload gets.
    public func createAdmitted(_ upload: ResumableUpload, account: Account, plan current: AccountPlan) async throws
        -> ResumableUpload
    {
        await releasePlacesOfDeadProcesses.value
        switch try await database.createUpload(upload, now: clock(), limits: planLimits) {
        case .success(let upload): return upload
        case .failure(let refusal): throw await rejection(refusal, account: account, plan: current)
        }
    }

    /// How long a plain upload's place lasts unless renewed (its request renews it while the body
    /// arrives; a process that died frees it within this).
    public static let uploadAdmissionSeconds = 120.0

    /// A new plain upload's place, named after this process (`UploadHolder`).
    public func newUploadAdmissionID() -> String { UploadHolder.current.name + "/" + UUID().uuidString.lowercased() }

    /// Takes a plain upload's place (`id`) against the plan, in one transaction.
    public func admitUpload(id: String, account: Account, plan current: AccountPlan) async throws {
        await releasePlacesOfDeadProcesses.value
        let now = clock()
        switch try await database.admitUpload(
            id: id, accountId: account.id, until: now.addingTimeInterval(Self.uploadAdmissionSeconds),
            now: now, limits: planLimits)
        {
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

    func rejection(_ refusal: QuotaRefusal, account: Account, plan current: AccountPlan) async -> Refusal {
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

/// Who holds a plain upload's place: this host, its boot, and this process (its pid and the
/// pid's start time, so a restarted server that got the same pid, as in a container, is told
/// apart). A server killed while uploads streamed leaves their places behind; the next process on
/// the same host frees those of processes that are gone before it admits its first upload, so the
/// account is not held up for the places' lease (`uploadAdmissionSeconds`). Other hosts' places
/// lapse by the lease alone.
struct UploadHolder: Equatable {
    var host: String
    var boot: String
    var pid: Int32
    var started: String

    var name: String { "\(host)/\(boot)/\(pid)/\(started)" }
    /// The prefix every place of this host and boot starts with.
    var hostPrefix: String { "\(host)/\(boot)/" }

    static let current: UploadHolder = {
        var buffer = [CChar](repeating: 0, count: 256)
        let host = gethostname(&buffer, buffer.count - 1) == 0 ? String(cString: buffer) : "host"
        let boot =
            (try? String(contentsOfFile: "/proc/sys/kernel/random/boot_id", encoding: .utf8))?
            .trimmingCharacters(in: .whitespacesAndNewlines) ?? "boot"
        let pid = getpid()
        return UploadHolder(
            host: host.replacingOccurrences(of: "/", with: "_"), boot: boot, pid: pid,
            started: startTime(of: pid) ?? "0")
    }()

    /// The process's start time in clock ticks after boot (field 22 of /proc/<pid>/stat); nil when
    /// there is no such process.
    static func startTime(of pid: Int32) -> String? {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
            let close = stat.lastIndex(of: ")")
        else { return nil }
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        // After the name: state is field 3, so start time (22) is the 20th here.
        return fields.count > 19 ? String(fields[19]) : nil
    }

    /// Whether the place `id` belongs to a process of this host and boot that is gone.
    static func isDead(_ id: String, on holder: UploadHolder = .current) -> Bool {
        guard id.hasPrefix(holder.hostPrefix) else { return false }
        let parts = id.dropFirst(holder.hostPrefix.count).split(separator: "/")
        guard parts.count >= 2, let pid = Int32(parts[0]) else { return false }
        if pid == holder.pid && String(parts[1]) == holder.started { return false }
        return startTime(of: pid) != String(parts[1])
    }
}

extension JobService {
    /// Frees the places this host's dead processes held (once per process, before its first admission).
    static func releaseDeadHolders(_ database: any MomentsStore) async {
        let holder = UploadHolder.current
        guard let ids = try? await database.uploadAdmissionIDs(prefix: holder.hostPrefix) else { return }
        for id in ids where UploadHolder.isDead(id, on: holder) {
            try? await database.releaseUploadAdmission(id: id)
        }
    }
}
