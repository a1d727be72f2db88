import FFmpeg
import Foundation
import Highlight
import MediaEngine
import Store
import Wording

/// One attempt at a job's highlight: how it ended, and the re-upload it was recognised as.
public struct HighlightAttempt: Sendable {
    public var outcome: HighlightOutcome
    public var recognized: RecognizedReupload?

    public init(outcome: HighlightOutcome, recognized: RecognizedReupload? = nil) {
        self.outcome = outcome; self.recognized = recognized
    }

    /// The input could not be brought to the worker (the media storage failed): worth another attempt.
    public static let workspaceFailure = HighlightAttempt(
        outcome: .failed(
            MediaProblem(
                MediaError(
                    .io, operation: "prepare workspace", detail: "the input could not be fetched from the media storage"))
        ))
}

/// How a job's children ended, in the terms the worker records.
public enum HighlightOutcome: Sendable {
    /// The highlight is made.
    case made(MadeHighlight)
    /// The child answered, but with no result (a bug: the service's fault, charged nothing).
    case answeredWithoutResult
    /// A media error: the input's fault, or the storage's (`MediaProblem.isTransient`).
    case failed(MediaProblem)
    /// Stopped on request (cancel or shutdown).
    case cancelled
    /// The child died or ran out of time; `reason` is for the log.
    case abnormal(reason: String, timedOut: Bool)
    /// A layer of the sandbox could not be set up: the operator's to fix.
    case sandboxUnavailable(reason: String)

    init(_ outcome: ChildOutcome) {
        switch outcome {
        case .answered(let message):
            self = message.result.map { .made(MadeHighlight(result: $0)) } ?? .answeredWithoutResult
        case .failed(let error): self = .failed(MediaProblem(error))
        case .cancelled: self = .cancelled
        case .abnormal(let reason, let timedOut): self = .abnormal(reason: reason, timedOut: timedOut)
        case .sandboxUnavailable(let reason): self = .sandboxUnavailable(reason: reason)
        }
    }
}

/// A media error as the job's owner and the log see it.
public struct MediaProblem: Sendable {
    /// The stable code the job records (`MediaFailure`'s name).
    public var code: String
    /// The owner's sentence: what to do; never a path or FFmpeg's text.
    public var message: String
    /// A failure of the service (its storage), not of the video: worth another attempt.
    public var isTransient: Bool
    /// What failed, with FFmpeg's text: for the log only.
    public var description: String

    init(_ error: MediaError) {
        (code, message) = Self.failure(error)
        isTransient = error.kind == .io
        description = error.description
    }

    /// The code and sentence a failed job shows to its owner: the user's terms, never a path or
    /// FFmpeg's text (those go to the log).
    static func failure(_ error: MediaError) -> (String, String) {
        // Limits on decoded data: the detail names the limit in the user's terms.
        (error.kind.rawValue, Say.jobFailed(error.kind, detail: error.detail))
    }
}

/// A made highlight, as the job records it: its output, its segments, and whether it is an
/// earlier job's highlight given again (whose files are then copied, not published).
public struct MadeHighlight: Sendable {
    let result: ChildMessage.Result

    /// The earlier job whose highlight this one is (a recognised re-upload given the same one).
    public var copiesHighlightOf: String? {
        guard let duplicate = result.report.duplicateOf, duplicate.resultCopied else { return nil }
        return duplicate.jobId
    }
    /// The earlier job's storyboard is this one's too (same timeline): copy it along.
    public var reusesStoryboard: Bool { result.report.storyboardReused == true }
    /// This highlight's storyboard layout (for a copied highlight, the new video's).
    public var storyboard: StoryboardFrame? { result.report.storyboard }
    public var fileSize: Int64 { result.render?.fileSize ?? 0 }
    public var copiedFrames: Int { result.render?.copiedFrames ?? 0 }

    /// The job's output as its owner sees it: the render's (upright dimensions), or the earlier
    /// highlight's for a copied re-upload.
    public func output(earlier: JobOutput?) -> JobOutput {
        let render = result.render
        let upright = (render?.rotation ?? 0) % 180 != 0
        var output = JobOutput(
            duration: render?.duration ?? 0, size: render?.fileSize ?? 0,
            width: upright ? render?.height ?? 0 : render?.width ?? 0,
            height: upright ? render?.width ?? 0 : render?.height ?? 0)
        if let earlier {
            output = JobOutput(
                duration: earlier.duration, size: earlier.size, width: earlier.width, height: earlier.height)
            output.render = earlier.render
            output.preview = earlier.preview
        }
        output.analysisReused = result.report.analysisReused ?? result.cached
        output.render = result.report.render.map {
            JobRender(method: $0.method.rawValue, reason: $0.reason, largestStartShift: $0.largestStartShift)
        }
        // quality=original: a preview every browser plays follows the completion.
        if result.report.render != nil, result.render != nil { output.preview = JobPreview(state: .pending) }
        output.duplicateOf = result.report.duplicateOf.map {
            JobDuplicate(jobId: $0.jobId, offsetSeconds: $0.offset, resultCopied: $0.resultCopied)
        }
        output.storyboard = earlier != nil ? earlier?.storyboard : result.report.storyboard
        return output
    }

    /// The chosen segments with their scores and, when reframed, each one's mean crop window.
    public var segments: [Segment] {
        let reframe = result.report.reframe
        return result.report.segments.enumerated().map { index, s in
            var segment = s
            if let reframe, index < reframe.tracks.count {
                segment.crop = Self.meanWindow(reframe, track: reframe.tracks[index])
            }
            return segment
        }
    }

    /// A reframe track's mean window over its segment (for timelines: one transform per clip).
    static func meanWindow(_ reframe: Reframe, track: CropTrack) -> CropWindow {
        let n = Double(max(1, track.x.count))
        let cx = track.x.isEmpty ? 0.5 : track.x.reduce(0, +) / n
        let cy = track.y.isEmpty ? 0.5 : track.y.reduce(0, +) / n
        return CropWindow(
            x: max(0, cx - reframe.width / 2), y: max(0, cy - reframe.height / 2), width: reframe.width,
            height: reframe.height)
    }
}

