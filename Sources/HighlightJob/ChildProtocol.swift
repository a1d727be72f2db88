import Analysis
import FFmpeg
import Foundation
import Highlight
import MediaEngine
import Isolation

/// What the service asks of an isolated child (`moments job-exec`), sent as one JSON line on its
/// standard input. The child answers with JSON lines on its standard output (`ChildMessage`). A
/// recognition that `continues` is followed, once answered, by a second line: the highlight task
/// the parent prepared from the answer (or the end of the input: nothing more).
public struct ChildTask: Codable, Sendable {
    public enum Kind: String, Codable, Sendable { case probe, highlight, recognize, preview }

    public var kind: Kind
    public var source: String
    /// For `.highlight`: the whole engine request, as the engine declares it.
    public var highlight: HighlightRequest?
    /// For `.recognize`: the candidates file and the analysis settings (size, decode limits).
    public var recognize: RecognizeSpec?
    /// For `.recognize`: after its answer the same child reads and runs a `.highlight` task (one
    /// process for the job: no second start, no second open of the input).
    public var continues: Bool?
    /// For `.preview`: where the preview of the highlight `source` is written.
    public var previewOutput: String?

    public static func probe(_ path: String) -> ChildTask { ChildTask(kind: .probe, source: path, highlight: nil) }
    public static func recognize(
        _ path: String, candidates: String, analysis: AnalysisSettings, continues: Bool = false
    ) -> ChildTask {
        ChildTask(
            kind: .recognize, source: path, highlight: nil,
            recognize: RecognizeSpec(candidates: candidates, analysis: analysis),
            continues: continues ? true : nil)
    }
    /// The small H.264 copy (≤ 540p, SDR) of a finished highlight, which every browser plays.
    public static func preview(of highlight: String, to output: String) -> ChildTask {
        var task = ChildTask(kind: .preview, source: highlight, highlight: nil)
        task.previewOutput = output
        return task
    }
    public static func highlight(_ request: HighlightRequest) -> ChildTask {
        ChildTask(kind: .highlight, source: request.source, highlight: request)
    }
}

/// Is the input an earlier upload of the account? (`ReuploadRecognizer`, before the analysis.)
public struct RecognizeSpec: Codable, Sendable {
    /// A JSON file of `[ReuploadCandidate]` in the job's folder.
    var candidates: String
    var analysis: AnalysisSettings
}

/// One line the child writes: progress, then exactly one of probe / result / failure.
public struct ChildMessage: Codable, Sendable, ChildReply {
    public struct Progress: Codable, Sendable { public var stage: String; public var fraction: Double }
    public struct Result: Codable, Sendable {
        public var report: HighlightReport
        public var render: RenderResult?
        public var cached: Bool
        /// The input's content fingerprint (stored for recognising its re-uploads), when it was analysed.
        public var fingerprint: ContentFingerprint?
    }

    public var progress: Progress?
    public var probe: MediaInfo?
    public var recognition: Recognition?
    public var result: Result?
    /// A `.preview` task's render.
    public var preview: RenderResult?
    public var failure: ChildFailure?

    public var progressReport: (stage: String, fraction: Double)? { progress.map { ($0.stage, $0.fraction) } }
    public var isAnswer: Bool { probe != nil || result != nil || recognition != nil || preview != nil }
    public var isFailure: Bool { failure != nil }
}

/// A MediaError as JSON. The kind travels as its raw name, so kinds added later still round-trip.
public struct ChildFailure: Codable, Sendable, Equatable {
    public var kind: String
    public var operation: String
    public var detail: String
    public var code: Int32?
    public var ffmpegMessage: String?

    public init(_ error: MediaError) {
        kind = error.kind.rawValue; operation = error.operation; detail = error.detail
        code = error.code; ffmpegMessage = error.ffmpegMessage
    }

    public func mediaError(path: String?) -> MediaError {
        MediaError(
            MediaError.Kind(rawValue: kind) ?? .ffmpeg, operation: operation, path: path, detail: detail,
            code: code, ffmpegMessage: ffmpegMessage)
    }
}
