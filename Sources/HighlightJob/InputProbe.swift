import FFmpeg
import Foundation
import Isolation
import Logging
import MediaEngine
import Store

/// What the isolated probe of a received file found: the input a job would get, or why not.
public enum ProbedInput: Sendable {
    /// A readable video, described in the store's terms (display size, after rotation).
    case video(JobInput)
    /// The input's fault: not a video this server reads (`kind`), in the user's `detail`.
    case unusable(kind: MediaFailure, detail: String, logText: String)
    /// The probe died, misbehaved or answered nothing; `reason` is for the log.
    case unreadable(reason: String)
    /// A layer of the sandbox could not be set up: the operator's to fix.
    case sandboxUnavailable(reason: String)
}

/// Probes a received file in an isolated job child (`moments job-exec`) with resource limits: the
/// probe parses the upload, so it never runs in the server.
public enum InputProbe {
    public static func probe(
        _ path: String, isolation: IsolationSettings, seconds: Double, logger: Logger
    ) async -> ProbedInput {
        let outcome = await MediaChild.run(
            .probe(path), settings: isolation, access: ChildAccess(readable: [path]), wallSeconds: seconds,
            cpuSeconds: UInt64(seconds), cancellation: nil, logger: logger)
        switch outcome {
        case .answered(let message):
            guard let info = message.probe else { return .unreadable(reason: "the probe answered nothing") }
            let v = info.video
            return .video(
                JobInput(
                    size: info.fileSize, duration: info.duration, container: info.container, videoCodec: v.codec,
                    audioCodec: info.mainAudio?.codec, width: v.displayWidth, height: v.displayHeight,
                    rotation: v.rotation, frameRate: v.frameRate))
        case .failed(let error):
            return .unusable(kind: error.kind, detail: error.detail, logText: error.description)
        case .cancelled:
            return .unreadable(reason: "the probe was stopped")
        case .abnormal(let reason, _):
            return .unreadable(reason: reason)
        case .sandboxUnavailable(let reason):
            return .sandboxUnavailable(reason: reason)
        }
    }
}
