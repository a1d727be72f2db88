import Foundation
import Accounts
import Requests
import Store

/// Admission of uploads against the plan, in the store (Store's UploadAdmission.swift): a
/// resumable upload's row and a plain upload's place are inserted in the transaction that checks
/// the month's quota, jobs at once (active jobs, uploads still receiving, plain uploads being
/// received) and the day's worker time, so parallel requests of one account cannot all pass.
extension UploadIntake {
    /// Inserts a resumable upload after the plan's checks, in one transaction; a refusal is the
    /// same one a plain upload gets.
    public func createAdmitted(_ upload: ResumableUpload, account: Account, plan current: AccountPlan) async throws
        -> ResumableUpload
    {
        await releasePlacesOfDeadProcesses.value
        switch try await database.createUpload(upload, now: clock(), limits: policy.limits) {
        case .success(let upload): return upload
        case .failure(let refusal): throw await policy.refusal(refusal, account: account, plan: current)
        }
    }

    /// How long a plain upload's place lasts unless renewed (its request renews it while the body
    /// arrives; a process that died frees it within this).
    public static let uploadAdmissionSeconds = 120.0

    /// A new plain upload's place, named after this process (`UploadHolder`).
    public func newUploadAdmissionID() -> String { UploadHolder.current.name + "/" + UUID().uuidString.lowercased() }

    /// Runs `body` while a plain upload holds its place against the account's plan: the plan's
    /// checks (quota, jobs at once counting the account's uploads in progress on any process), the
    /// place taken in one transaction, renewed while the body arrives and given back after,
    /// whatever `body` does. A resumable upload's place is its row (`createAdmitted`).
    public func whileAdmitted<T: Sendable>(
        _ account: Account, _ body: (AccountPlan) async throws -> T
    ) async throws -> T {
        let admission = newUploadAdmissionID()
        let current = try await policy.precheck(account, uploadsInProgress: 0)
        try await admitUpload(id: admission, account: account, plan: current)
        let renewal = Task {
            while !Task.isCancelled {
                try? await Task.sleep(for: .seconds(Self.uploadAdmissionSeconds / 4))
                if Task.isCancelled { break }
                await self.renewUploadAdmission(id: admission)
            }
        }
        defer { renewal.cancel() }
        do {
            let result = try await body(current)
            await releaseUploadAdmission(id: admission)
            return result
        } catch {
            await releaseUploadAdmission(id: admission)
            throw error
        }
    }

    /// Takes a plain upload's place (`id`) against the plan, in one transaction.
    public func admitUpload(id: String, account: Account, plan current: AccountPlan) async throws {
        await releasePlacesOfDeadProcesses.value
        let now = clock()
        switch try await database.admitUpload(
            id: id, accountId: account.id, until: now.addingTimeInterval(Self.uploadAdmissionSeconds),
            now: now, limits: policy.limits)
        {
        case .success: return
        case .failure(let refusal): throw await policy.refusal(refusal, account: account, plan: current)
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
}

extension UploadIntake {
    /// Frees the places this host's dead processes held (once per process, before its first admission).
    static func releaseDeadHolders(_ database: any UploadRepository) async {
        let holder = UploadHolder.current
        guard let ids = try? await database.uploadAdmissionIDs(prefix: holder.hostPrefix) else { return }
        for id in ids where UploadHolder.isDead(id, on: holder) {
            try? await database.releaseUploadAdmission(id: id)
        }
    }
}
