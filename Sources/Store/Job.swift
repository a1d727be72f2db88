import Foundation
import MediaVocabulary
import Wording

public enum JobState: String, Codable, Sendable, CaseIterable {
    case pending, processing, completed, failed, cancelled

    public var isFinished: Bool { self == .completed || self == .failed || self == .cancelled }
}

/// What the probe found in the uploaded video.
public struct JobInput: Codable, Sendable, Equatable {
    public var size: Int64
    public var duration: Double
    public var container: String
    public var videoCodec: String
    public var audioCodec: String?
    public var width: Int
    public var height: Int
    public var rotation: Int
    public var frameRate: Double

    public init(
        size: Int64, duration: Double, container: String, videoCodec: String, audioCodec: String?,
        width: Int, height: Int, rotation: Int, frameRate: Double
    ) {
        self.size = size; self.duration = duration; self.container = container; self.videoCodec = videoCodec
        self.audioCodec = audioCodec; self.width = width; self.height = height; self.rotation = rotation
        self.frameRate = frameRate
    }
}

/// How the highlight is to be cut, beyond its length and quality: its shape, moments pinned and
/// excluded, the upload's file name (for timelines) and, for a re-cut, the job it re-cuts.
public struct JobEdit: Codable, Sendable, Equatable {
    /// The shape: the source's, or a crop to 16:9, 9:16, 1:1 or 4:5.
    public var aspect: AspectRatio
    /// Source seconds that must be shown.
    public var include: [Double]
    /// Source ranges never shown.
    public var exclude: [TimeRange]
    /// People or action first (nil: auto, people first where there are any).
    public var focus: HighlightFocus?
    public var sourceName: String?
    /// The job whose input and stored analysis this one reuses.
    public var recutOf: String?
    /// The input is kept after the highlight is made (the plan allows re-cuts), until the result's
    /// retention ends.
    public var keepsInput: Bool?
    /// The job whose stored input is this one's too: a recognised re-upload of the same video
    /// keeps one copy, the newest's (re-cuts of this job copy it from there).
    public var inputHeldBy: String?

    public init(
        aspect: AspectRatio = .source, include: [Double] = [], exclude: [TimeRange] = [], sourceName: String? = nil,
        recutOf: String? = nil, keepsInput: Bool? = nil
    ) {
        self.aspect = aspect; self.include = include; self.exclude = exclude; self.sourceName = sourceName;
        self.recutOf = recutOf
        self.keepsInput = keepsInput
    }
}


/// The rendered highlight.
public struct JobOutput: Codable, Sendable, Equatable {
    public var duration: Double
    public var size: Int64
    public var width: Int
    public var height: Int
    /// The analysis was reused (a re-cut, or a re-upload), not made by decoding the input again.
    public var analysisReused: Bool?
    /// The upload was recognised as an earlier upload of the same account.
    public var duplicateOf: JobDuplicate?
    /// `quality=original`: the pictures copied from the source, or encoded and why (nil: encoded,
    /// as every other quality is).
    public var render: JobRender?
    /// `quality=original`: the small H.264 copy every browser plays, made after the job completed.
    public var preview: JobPreview?
    /// The storyboard picture's size and its filmstrip row (nil: no storyboard).
    public var storyboard: StoryboardFrame?

    public init(duration: Double, size: Int64, width: Int, height: Int) {
        self.duration = duration; self.size = size; self.width = width; self.height = height
    }
}

/// A `quality=original` highlight's preview: H.264 at most 540p, made after the original is stored.
public struct JobPreview: Codable, Sendable, Equatable {
    public enum State: String, Codable, Sendable { case pending, ready, failed }
    public var state: State
    public var size: Int64?
    public var width: Int?
    public var height: Int?

    public init(state: State, size: Int64? = nil, width: Int? = nil, height: Int? = nil) {
        self.state = state; self.size = size; self.width = width; self.height = height
    }
}

/// How a `quality=original` highlight's pictures were made.
public struct JobRender: Codable, Sendable, Equatable {
    /// "copy" (the source's coded pictures) or "encode".
    public var method: String
    /// Why they were encoded although the original was asked for.
    public var reason: String?
    /// Copied: the largest move of a start onto a keyframe, in seconds.
    public var largestStartShift: Double?

    public init(method: String, reason: String?, largestStartShift: Double?) {
        self.method = method; self.reason = reason; self.largestStartShift = largestStartShift
    }
}

/// An earlier job of the same account whose input a new upload was recognised as (re-encoded,
/// resized, rotated or trimmed copies included).
public struct JobDuplicate: Codable, Sendable, Equatable {
    public var jobId: String
    /// Seconds: time t of this job's video shows what time t + offset shows in the earlier one.
    public var offsetSeconds: Double
    /// The earlier highlight was returned as this job's (the same highlight was asked for): no
    /// render, and no quota unit charged.
    public var resultCopied: Bool

    public init(jobId: String, offsetSeconds: Double, resultCopied: Bool) {
        self.jobId = jobId; self.offsetSeconds = offsetSeconds; self.resultCopied = resultCopied
    }
}


/// What a status poll needs of a job.
public struct JobStatusRow: Sendable, Equatable {
    public var id: String
    public var status: JobState
    public var progress: Int
    public var message: String
    public var mediaDeleted: Bool

    public init(id: String, status: JobState, progress: Int, message: String, mediaDeleted: Bool) {
        self.id = id; self.status = status; self.progress = progress; self.message = message;
        self.mediaDeleted = mediaDeleted
    }
}


/// A highlight job: one row of the durable queue.
public struct Job: Codable, Sendable, Equatable {
        public var id: String
    public var accountId: String
    public var status: JobState
    /// The current stage while processing (analysing, selecting, rendering, finishing).
    public var stage: String?
    /// 0–100, never decreasing.
    public var progress: Int
    public var message: String
    public var targetDuration: Int
    public var quality: HighlightQuality
    public var input: JobInput
    public var estimatedSeconds: Int
    /// Times a worker has started this job (a crash leaves it processing; start-up re-queues it).
    public var attempts: Int
    public var createdAt: Date
    public var startedAt: Date?
    public var finishedAt: Date?
    public var updatedAt: Date
    /// Wall-clock processing time of the successful attempt (feeds the time estimate).
    public var processingSeconds: Double?
    public var errorCode: String?
    public var errorMessage: String?
    public var output: JobOutput?
    public var segments: [Segment]?
    /// Set when the result media were deleted (on request or after the retention period).
    public var mediaDeletedAt: Date?
    /// The month (UTC) the job's unit counts against, and its state (reserved, consumed, released).
    public var quotaPeriod: String?
    public var quotaState: String?
    /// Largest shorter side of the output, from the account's plan when the job was accepted.
    public var outputCap: Int?
    /// Hours the result is kept after the job finished (the plan's retention); nil: the server default.
    public var retentionHours: Double?
    /// The plan's longest video when the job was accepted: enforced on decoded timestamps.
    public var maxDurationSeconds: Double?
    /// Times the job's isolated child died abnormally (crash, out of memory, killed).
    public var abnormalExits: Int = 0
    /// A job re-queued after a transient failure waits until then (exponential backoff).
    public var runAfter: Date?
    /// Worker time spent on the job so far, over all attempts.
    public var workerSeconds: Double = 0
    /// The worker holding the job while it is processing, and until when (it renews the lease while
    /// it works; a rescuer re-queues the job once the lease has expired).
    public var leaseOwner: String?
    public var leaseExpiresAt: Date?
    /// Shape, pinned and excluded moments, source name, re-cut origin; nil for a plain highlight.
    public var edit: JobEdit?

    public init(
        id: String, accountId: String, targetDuration: Int, quality: HighlightQuality, input: JobInput,
        estimatedSeconds: Int, now: Date
    ) {
        self.id = id; self.accountId = accountId; self.status = .pending; self.stage = nil; self.progress = 0
        self.message = Say.waitingInQueue; self.targetDuration = targetDuration; self.quality = quality
        self.input = input; self.estimatedSeconds = estimatedSeconds; self.attempts = 0; self.createdAt = now
        self.updatedAt = now
    }
}

extension Job {
    /// What a job says when it failed because processing was interrupted too often (both engines).
    public static func interruptedMessage(attempts: Int) -> String { Say.interruptedTooOften(attempts: attempts) }

    /// What a job re-queued after an interruption says (both engines).
    public static func requeuedMessage(attempts: Int, maxAttempts: Int) -> String {
        Say.requeuedAfterInterruption(nextAttempt: attempts + 1, of: maxAttempts)
    }
}
