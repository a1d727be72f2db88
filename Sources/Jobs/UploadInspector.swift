import Foundation
import JobStore
import Logging
import MediaEngine

/// Why an upload is refused: an HTTP status, a stable code, a sentence saying what to do, and the
/// figures a client can act on (limits, usage, the product that lifts a limit).
public struct UploadRejection: Error, Sendable, Equatable {
    public enum Value: Sendable, Equatable { case int(Int), string(String) }

    public var status: Int
    public var code: String
    public var detail: String
    public var extras: [String: Value]
    /// Seconds, for a 429's Retry-After.
    public var retryAfter: Int?

    public init(status: Int, code: String, detail: String, extras: [String: Value] = [:], retryAfter: Int? = nil) {
        self.status = status; self.code = code; self.detail = detail; self.extras = extras; self.retryAfter = retryAfter
    }
}

/// Probes a received file before a job is accepted. The probe parses the upload, so it runs in an
/// isolated child process (`moments job-exec`) with resource limits, never in the server.
public struct UploadInspector: Sendable {
    public var maxDurationSeconds: Double
    public var isolation: IsolationSettings
    public var logger: Logger
    /// Wall-clock and CPU limits of one probe.
    public var timeLimitSeconds = 30.0

    public init(maxDurationSeconds: Double, isolation: IsolationSettings, logger: Logger) {
        self.maxDurationSeconds = maxDurationSeconds; self.isolation = isolation; self.logger = logger
    }

    /// The input description, or the reason this file cannot become a job.
    public func inspect(_ path: String) async throws(UploadRejection) -> JobInput {
        let (isolation, limit, logger) = (self.isolation, timeLimitSeconds, self.logger)
        let outcome = (try? await EngineThread.run(name: "moments-probe", niceness: 0) {
            IsolatedChild.run(.probe(path), settings: isolation, access: ChildAccess(readable: [path]), wallSeconds: limit, cpuSeconds: UInt64(limit),
                              cancellation: nil, logger: logger)
        }) ?? .abnormal(reason: "the probe thread failed", timedOut: false)
        switch outcome {
        case .answered(let message):
            guard let info = message.probe else { throw Self.unreadable }
            return try check(info).get()
        case .failed(let error):
            logger.info("upload refused by the probe", metadata: ["kind": "\(error.kind.rawValue)", "error": "\(error.description)"])
            throw Self.rejection(for: error)
        case .cancelled:
            throw Self.unreadable
        case .abnormal(let reason, _):
            logger.warning("the probe of an upload died", metadata: ["reason": "\(reason)"])
            throw Self.unreadable
        }
    }

    static let unreadable = UploadRejection(status: 422, code: "unreadable",
        detail: "The uploaded file could not be read: it is damaged or not a video this server can read. Upload an MP4, MOV or another format listed at /api/v1/upload/formats.")

    func check(_ info: MediaInfo) -> Result<JobInput, UploadRejection> {
        guard info.duration >= 1 else {
            return .failure(UploadRejection(status: 422, code: "too_short",
                detail: String(format: "The video is %.2f s long; a highlight needs at least 1 second of video.", info.duration)))
        }
        guard info.duration <= maxDurationSeconds else {
            return .failure(UploadRejection(status: 422, code: "too_long",
                detail: String(format: "The video is %.0f s long; this server accepts videos up to %.0f s. Trim it and upload again.",
                               info.duration, maxDurationSeconds)))
        }
        let v = info.video
        return .success(JobInput(size: info.fileSize, duration: info.duration, container: info.container,
                                 videoCodec: v.codec, audioCodec: info.mainAudio?.codec, width: v.displayWidth,
                                 height: v.displayHeight, rotation: v.rotation, frameRate: v.frameRate))
    }

    /// The user's terms only: what is wrong and what to do. FFmpeg's text and paths go to the log.
    static func rejection(for error: MediaError) -> UploadRejection {
        let what: String
        switch error.kind {
        case .emptyFile: what = "The uploaded file is empty."
        case .notMedia: what = "The uploaded file is not a video this server can read."
        case .notVideo: what = "The uploaded file has no video: it is a still image or audio only."
        case .unsupportedCodec: what = "The video's codec is not supported."
        case .dimensionsTooLarge: what = "The video's picture is larger than this server accepts (8192 px a side, 36 megapixels)."
        case .truncated: what = "The video file is incomplete (it ends early, e.g. the upload was cut short or the recording was not finished)."
        case .unsupportedContainer:
            what = "The uploaded file is a playlist, manifest, list of other files or a container this server does not open."
        case .tooLong, .tooManyFrames, .badTimestamps: what = "The video cannot be accepted: \(error.detail)."
        case .fileNotFound, .io, .ffmpeg, .cancelled, .invalidRange, .unusable: what = "The video cannot be read."
        }
        return UploadRejection(status: 422, code: error.kind.rawValue,
                               detail: what + " Upload an MP4, MOV or another format listed at /api/v1/upload/formats.")
    }
}
