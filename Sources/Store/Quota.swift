import Foundation

/// One line of the usage ledger: every reservation, consumption and release of a highlight.
public struct UsageEntry: Codable, Sendable, Equatable {
        public var id: Int64?
    public var accountId: String
    public var jobId: String
    /// The calendar month (UTC) the unit counts against: "2026-11".
    public var period: String
    /// +1 reserve, 0 consume (the reserved unit is kept), -1 release.
    public var change: Int
    /// Worker time charged against the account's daily budget by this line (0 for most).
    public var workerSeconds: Double = 0
    public var reason: String
    public var createdAt: Date
}

/// A plan's terms for a job, as the accepting transaction applies them.
public struct QuotaLimits: Sendable, Equatable {
    /// Highlights per period; nil = no cap.
    public var monthly: Int?
    public var concurrent: Int
    /// Largest shorter side of the output, and how long the result is kept.
    public var outputCap: Int
    public var retentionHours: Double
    /// The plan's longest video (enforced on decoded timestamps by the worker).
    public var maxDurationSeconds: Double?
    /// Worker seconds per UTC day; nil = no budget.
    public var dailyWorkerSeconds: Double?
    /// A resumable upload that has received nothing for this long stops counting against jobs at
    /// once (it may still resume while it exists; its place is checked again then); nil = it
    /// counts until it expires.
    public var uploadIdleSeconds: Double?
    public init(
        monthly: Int?, concurrent: Int, outputCap: Int, retentionHours: Double,
        maxDurationSeconds: Double? = nil, dailyWorkerSeconds: Double? = nil, uploadIdleSeconds: Double? = nil
    ) {
        self.monthly = monthly; self.concurrent = concurrent; self.outputCap = outputCap;
        self.retentionHours = retentionHours
        self.maxDurationSeconds = maxDurationSeconds; self.dailyWorkerSeconds = dailyWorkerSeconds
        self.uploadIdleSeconds = uploadIdleSeconds
    }

    /// Uploads that received bytes since then (or are receiving now) hold a place.
    public func uploadsActiveSince(_ now: Date) -> Date {
        uploadIdleSeconds.map { now.addingTimeInterval(-$0) } ?? .distantPast
    }
}

/// Why the accepting transaction refused a job.
public enum QuotaRefusal: Error, Sendable, Equatable {
    case overQuota(limit: Int, used: Int)
    case tooManyJobs(limit: Int, active: Int)
    /// The day's worker time is spent (seconds used of `limit`).
    case overBudget(limit: Double, used: Double)
}

public enum QuotaState: String, Sendable { case reserved, consumed, released }
