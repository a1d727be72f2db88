import Foundation

/// Uploaded videos kept after their highlight for re-cuts (`edit.keepsInput`), per account: what
/// counts against the plan's kept-input allowance, releasing them early, and one copy kept for a
/// recognised re-upload of the same video (`edit.inputHeldBy`).
public protocol KeptInputRepository: Sendable {
    /// The account's completed jobs whose own input is kept (media not deleted, `keepsInput`, not
    /// held by another job), oldest first (by finish, then creation).
    func keptInputJobs(accountId: String) async throws -> [Job]
    /// The job's input is no longer kept (nor that of the jobs whose input it held): `keepsInput`
    /// false on each. Returns their ids.
    @discardableResult
    func releaseKeptInput(jobId: String, accountId: String) async throws -> [String]
    /// Job `from`'s kept input is job `to`'s from now on (and so is every input `from` held).
    func moveKeptInput(from: String, to: String, accountId: String) async throws
}
