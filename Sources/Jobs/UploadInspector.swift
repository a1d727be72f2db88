import Foundation
import JobStore
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

/// Probes a received file before a job is accepted.
public struct UploadInspector: Sendable {
    public var maxDurationSeconds: Double

    public init(maxDurationSeconds: Double) { self.maxDurationSeconds = maxDurationSeconds }

    /// The input description, or the reason this file cannot become a job. Runs the probe off the
    /// caller's thread (it reads the file).
    public func inspect(_ path: String) async throws(UploadRejection) -> JobInput {
        let maxDuration = maxDurationSeconds
        let outcome: Result<JobInput, UploadRejection> = await withCheckedContinuation { continuation in
            DispatchQueue.global().async {
                continuation.resume(returning: Self.inspectNow(path, maxDuration: maxDuration))
            }
        }
        return try outcome.get()
    }

    static func inspectNow(_ path: String, maxDuration: Double) -> Result<JobInput, UploadRejection> {
        let info: MediaInfo
        do {
            info = try Probe.probe(path)
        } catch {
            return .failure(rejection(for: error))
        }
        guard info.duration >= 1 else {
            return .failure(UploadRejection(status: 422, code: "too_short",
                detail: String(format: "The video is %.2f s long; a highlight needs at least 1 second of video.", info.duration)))
        }
        guard info.duration <= maxDuration else {
            return .failure(UploadRejection(status: 422, code: "too_long",
                detail: String(format: "The video is %.0f s long; this server accepts videos up to %.0f s. Trim it and upload again.",
                               info.duration, maxDuration)))
        }
        let v = info.video
        return .success(JobInput(size: info.fileSize, duration: info.duration, container: info.container,
                                 videoCodec: v.codec, audioCodec: info.mainAudio?.codec, width: v.displayWidth,
                                 height: v.displayHeight, rotation: v.rotation, frameRate: v.frameRate))
    }

    static func rejection(for error: MediaError) -> UploadRejection {
        let what: String
        switch error.kind {
        case .emptyFile: what = "The uploaded file is empty."
        case .notMedia: what = "The uploaded file is not a video this server can read."
        case .notVideo: what = "The uploaded file has no video: it is a still image or audio only."
        case .unsupportedCodec: what = "The video's codec is not supported."
        case .dimensionsTooLarge: what = "The video's picture is larger than this server accepts (8192 px a side, 36 megapixels)."
        case .truncated: what = "The video file is incomplete (it ends early, e.g. the upload was cut short or the recording was not finished)."
        default: what = "The video cannot be read."
        }
        var detail = what
        if let ffmpeg = error.ffmpegMessage { detail += " (\(ffmpeg))" }
        else if error.detail != what { detail += " (\(error.detail))" }
        detail += " Upload an MP4, MOV or another format listed at /api/v1/upload/formats."
        return UploadRejection(status: 422, code: error.kind.rawValue, detail: detail)
    }
}
