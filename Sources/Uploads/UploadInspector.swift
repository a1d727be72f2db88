import Foundation
import HighlightJob
import Isolation
import Logging
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
        switch await InputProbe.probe(path, isolation: isolation, seconds: timeLimitSeconds, logger: logger) {
        case .video(let input):
            return try check(input).get()
        case .unusable(let kind, let detail, let logText):
            logger.info("upload refused by the probe", metadata: ["kind": "\(kind.rawValue)", "error": "\(logText)"])
            throw .unusableMedia(kind: kind, detail: detail)
        case .unreadable(let reason):
            logger.warning("the probe of an upload gave no description", metadata: ["reason": "\(reason)"])
            throw .unreadable
        case .sandboxUnavailable(let reason):
            logger.error("an upload was not probed: its sandbox is incomplete", metadata: ["reason": "\(reason)"])
            throw .processingUnavailable
        }
    }

    func check(_ input: JobInput) -> Result<JobInput, Refusal> {
        guard input.duration >= 1 else {
            return .failure(.tooShort(duration: input.duration))
        }
        guard input.duration <= maxDurationSeconds else {
            return .failure(.tooLongForServer(duration: input.duration, limit: maxDurationSeconds))
        }
        return .success(input)
    }
}
