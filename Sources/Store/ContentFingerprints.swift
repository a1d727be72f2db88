import Foundation

/// An analysed upload's content fingerprint, stored for recognising re-uploads of the
/// same account. The fingerprint itself is opaque here: the analysis' JSON of it.
public struct StoredFingerprint: Codable, Sendable, Equatable {
        public var jobId: String
    public var accountId: String
    /// Seconds of video the fingerprint covers.
    public var duration: Double
    public var fingerprint: String
    public var createdAt: Date

    public init(jobId: String, accountId: String, duration: Double, fingerprint: String, createdAt: Date) {
        self.jobId = jobId; self.accountId = accountId; self.duration = duration; self.fingerprint = fingerprint;
        self.createdAt = createdAt
    }
}

/// Fingerprints of analysed uploads, per account.
public protocol FingerprintRepository: Sendable {
    /// Stores (or replaces) the fingerprint of a job's input.
    func saveFingerprint(_ fingerprint: StoredFingerprint) async throws
    /// The account's uploads a new one may be a copy of, newest first: completed jobs whose media
    /// are still stored, other than `excludingJob`, at most `limit`. Never another account's.
    func reuploadCandidates(accountId: String, excludingJob: String, limit: Int) async throws -> [(
        job: Job, fingerprint: StoredFingerprint
    )]
}
