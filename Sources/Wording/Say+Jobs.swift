/// Jobs: their status messages, results, downloads, previews, re-cuts and push notifications.
extension Say {
    public static func requeuedAfterInterruption(nextAttempt: Int, of maxAttempts: Int) -> String {
        "Waiting in the queue (processing was interrupted; attempt \(nextAttempt) of \(maxAttempts) next)"
    }
    public static let waitingInQueue = "Waiting in the queue"
    public static let highlightReady = "Your highlight is ready"
    public static let reuploadHighlightReady =
        "Your highlight is ready (the same video as an earlier upload: its highlight, not charged again)"
    public static let cancelledAtRequest = "Cancelled at your request"
    public static func waitingToRetry(_ reason: String) -> String { "Waiting to try again (\(reason))" }
    public static func pushReady(name: String) -> String { "The highlight of \u{201C}\(name)\u{201D} is ready to watch." }
    public static func pushReady(seconds: Int) -> String { "Your \(seconds)-second highlight is ready to watch." }
    public static let pushReady = "Your highlight is ready to watch."
    public static let pushFailedTitle = "Your highlight could not be made"
    public static let pushFailedWithoutReason = "Open the app to try again."
    // A running job's stages.
    public static let stageStarting = "Starting"
    public static let restartingAfterInterruption = "Restarting after an interruption"
    /// A job put back in the queue when its server stopped gracefully (the attempt not counted).
    public static let requeuedAtShutdown = "Waiting in the queue (the server restarted)"
    public static let stageRecognising = "Checking whether this video was uploaded before"
    public static let stageAnalysing = "Analysing shots, motion and sound"
    public static let stageSelecting = "Choosing the best moments"
    public static let stageRendering = "Rendering your highlight"
    public static let stageFinishing = "Finishing"
    public static func queued(ahead: Int) -> String { ahead == 0 ? "Waiting to start" : "Waiting in the queue (\(ahead) ahead)" }
    public static func jobNotFound(_ id: String) -> String { "There is no job \(id) for this API key. List your jobs with GET /api/v1/jobs." }
    public static let fileDeleted = "The file is no longer stored on the server."
    public static func rangeNotSatisfiable(_ range: String, size: Int64) -> String {
        "The Range \"\(range)\" does not fit this \(size)-byte file. Ask for bytes=0-\(max(0, size - 1)) or less."
    }
    public static let resultDeleted =
        "This job's result was deleted (on request or after the retention period). Upload the video again to make a new highlight."
    public static func jobNotCompleted(_ id: String, state: String, progress: Int) -> String {
        "The job is \(state) (\(progress)%); poll GET /api/v1/jobs/\(id)/status until it is completed."
    }
    public static func jobFailedNothingToDownload(_ reason: String) -> String { "The job failed, so there is nothing to download: \(reason)" }
    public static let jobCancelledNothingToDownload = "The job was cancelled, so there is nothing to download."
    public static let mediaLinkExpired = "This media link has expired. Ask for new links with GET /api/v1/jobs/{id}/media-links."
    public static let mediaLinkInvalid =
        "This media link is not valid (mistyped, or its API key was revoked). Ask for new links with GET /api/v1/jobs/{id}/media-links."
    public static let noStoryboard =
        "This highlight has no storyboard (it was made before storyboards existed, or its picture could not be drawn)."
    public static func recutQueued(of id: String, seconds: Int, aspect: String, estimate: Int) -> String {
        "Re-cut of \(id) queued: \(seconds) s, \(aspect), from the stored analysis. Ready in about \(estimate) s."
    }
    public static let recutBodyNotAnObject =
        "The body must be a JSON object with any of target_duration, quality, aspect, focus, include and exclude."
    public static func unknownRecutField(_ name: String) -> String {
        "Unknown field \"\(name)\". A re-cut takes target_duration, quality, aspect, focus, include and exclude."
    }
    public static let mediaDeleted = "The job's stored media were deleted."
    public static let previewPending = "The preview is still being made; try again in a few seconds. The original is ready to download."
    public static let noPreview = "This highlight has no preview. Download the original."
    public static func tooManyStreams(limit: Int) -> String {
        "Your account already has \(count(limit, "event stream")) open. Close one (each stream follows one job; poll GET /api/v1/jobs/{id}/status for the rest), then try again."
    }
    public static func recutNotCompleted(state: String) -> String { "Only a completed highlight can be re-cut; this job is \(state)." }
    public static let recutInputGone =
        "The original video of this highlight is no longer kept (deleted, its retention "
        + "period is over, or released to keep the account's stored videos within its plan). "
        + "Upload it again to make a new highlight."
}
