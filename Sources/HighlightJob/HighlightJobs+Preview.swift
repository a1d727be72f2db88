import FFmpeg
import Foundation
import Highlight
import MediaEngine
import Isolation
import JobMedia
import Logging

/// A made preview (upright dimensions).
public struct MadePreview: Sendable {
    public var size: Int64
    public var width: Int
    public var height: Int
}

extension HighlightJobs {
    /// A `quality=original` highlight's preview: an isolated child renders the highlight in the
    /// job's workspace again as H.264 at most 540p (HEVC and HDR play in few browsers), within
    /// `seconds`. Nil when none was made (the outcome is logged).
    public func makePreview(
        workspace: JobWorkspace, isolation: IsolationSettings, seconds: Double, token: CancellationToken, log: Logger
    ) async -> MadePreview? {
        let cores = ProcessInfo.processInfo.activeProcessorCount
        let outcome = await MediaChild.run(
            .preview(of: workspace.resultPath, to: workspace.previewPath), settings: isolation,
            access: ChildAccess(writable: [workspace.directory]), wallSeconds: seconds,
            cpuSeconds: UInt64(seconds) * UInt64(max(1, cores)), cancellation: token, logger: log)
        guard case .answered(let message) = outcome, let made = message.preview else {
            log.warning("no preview was made", metadata: ["outcome": "\(outcome)"])
            return nil
        }
        let upright = made.rotation % 180 != 0
        return MadePreview(
            size: made.fileSize, width: upright ? made.height : made.width, height: upright ? made.width : made.height)
    }
}
