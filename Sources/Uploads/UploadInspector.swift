import Foundation
import Isolation
import Logging
import MediaEngine
import Requests
import Store

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
    public func inspect(_ path: String) async throws(Refusal) -> JobInput {
        let (isolation, limit, logger) = (self.isolation, timeLimitSeconds, self.logger)
        let outcome = await IsolatedChild.run(
            .probe(path), settings: isolation, access: ChildAccess(readable: [path]), wallSeconds: limit,
            cpuSeconds: UInt64(limit), cancellation: nil, logger: logger)
        switch outcome {
        case .answered(let message):
            guard let info = message.probe else { throw .unreadable }
            return try check(info).get()
        case .failed(let error):
            logger.info(
                "upload refused by the probe",
                metadata: ["kind": "\(error.kind.rawValue)", "error": "\(error.description)"])
            throw .unusableMedia(kind: error.kind, detail: error.detail)
        case .cancelled:
            throw .unreadable
        case .abnormal(let reason, _):
            logger.warning("the probe of an upload died", metadata: ["reason": "\(reason)"])
            throw .unreadable
        case .sandboxUnavailable(let reason):
            logger.error("an upload was not probed: its sandbox is incomplete", metadata: ["reason": "\(reason)"])
            throw .processingUnavailable
        }
    }

    func check(_ info: MediaInfo) -> Result<JobInput, Refusal> {
        guard info.duration >= 1 else {
            return .failure(.tooShort(duration: info.duration))
        }
        guard info.duration <= maxDurationSeconds else {
            return .failure(.tooLongForServer(duration: info.duration, limit: maxDurationSeconds))
        }
        let v = info.video
        return .success(
            JobInput(
                size: info.fileSize, duration: info.duration, container: info.container,
                videoCodec: v.codec, audioCodec: info.mainAudio?.codec, width: v.displayWidth,
                height: v.displayHeight, rotation: v.rotation, frameRate: v.frameRate))
    }
}
