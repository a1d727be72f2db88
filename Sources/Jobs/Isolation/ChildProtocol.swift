import Foundation
import Highlight
import MediaEngine

/// What the service asks of an isolated child (`moments job-exec`), sent as one JSON document on
/// its standard input. The child answers with JSON lines on its standard output (`ChildMessage`).
public struct ChildTask: Codable, Sendable {
    public enum Kind: String, Codable, Sendable { case probe, highlight }

    public var kind: Kind
    public var source: String
    /// For `.highlight`: the whole engine request.
    public var highlight: HighlightSpec?

    public static func probe(_ path: String) -> ChildTask { ChildTask(kind: .probe, source: path, highlight: nil) }
    public static func highlight(_ request: HighlightRequest) -> ChildTask {
        ChildTask(kind: .highlight, source: request.source, highlight: HighlightSpec(request))
    }
}

/// A HighlightRequest as JSON (every field the engine reads).
public struct HighlightSpec: Codable, Sendable {
    var source: String
    var output: String?
    var quality: RenderQuality
    var style: HighlightStyle
    var crossfadeSeconds: Double
    var preset: String
    var audioFade: Double
    var maxFrameRate: Double
    var analysisOutput: String?
    var posterOutput: String?
    var cacheDirectory: String?
    var analysis: AnalysisSettings
    var weights: ScoreWeights
    var selection: SelectionSettings
    var analysisData: String?
    var storyboardOutput: String?
    var aspect: AspectRatio
    var reframe: ReframeSettings

    init(_ r: HighlightRequest) {
        source = r.source; output = r.output; quality = r.quality; style = r.style; crossfadeSeconds = r.crossfadeSeconds
        preset = r.preset; audioFade = r.audioFade; maxFrameRate = r.maxFrameRate; analysisOutput = r.analysisOutput; posterOutput = r.posterOutput; cacheDirectory = r.cacheDirectory
        analysis = r.analysis; weights = r.weights; selection = r.selection
        analysisData = r.analysisData; storyboardOutput = r.storyboardOutput; aspect = r.aspect; reframe = r.reframe
    }

    var request: HighlightRequest {
        var r = HighlightRequest(source: source)
        r.output = output; r.quality = quality; r.style = style; r.crossfadeSeconds = crossfadeSeconds; r.preset = preset
        r.audioFade = audioFade; r.maxFrameRate = maxFrameRate
        r.analysisOutput = analysisOutput; r.posterOutput = posterOutput; r.cacheDirectory = cacheDirectory
        r.analysis = analysis; r.weights = weights; r.selection = selection
        r.analysisData = analysisData; r.storyboardOutput = storyboardOutput; r.aspect = aspect; r.reframe = reframe
        return r
    }
}

/// One line the child writes: progress, then exactly one of probe / result / failure.
public struct ChildMessage: Codable, Sendable {
    public struct Progress: Codable, Sendable { public var stage: String; public var fraction: Double }
    public struct Result: Codable, Sendable {
        public var report: HighlightReport
        public var render: RenderResult?
        public var cached: Bool
    }

    public var progress: Progress?
    public var probe: MediaInfo?
    public var result: Result?
    public var failure: ChildFailure?
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
        MediaError(MediaError.Kind(rawValue: kind) ?? .ffmpeg, operation: operation, path: path, detail: detail,
                   code: code, ffmpegMessage: ffmpegMessage)
    }
}
