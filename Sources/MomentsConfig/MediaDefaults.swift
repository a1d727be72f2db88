import Analysis
import Configuration
import Foundation
import Highlight
import MediaEngine

/// The media defaults a deployment edits under `media` in Config/moments.json. Command-line options
/// and API parameters override them; every key can also be set from the environment
/// (`media.render.preset` → `MEDIA_RENDER_PRESET`).
public struct MediaDefaults: Sendable {
    public struct Render: Sendable {
        public var preset = "veryfast"
        public var quality = "high"
        public var crossfadeSeconds = 0.0
        public var audioFadeSeconds = 0.01
        public var maxFrameRate = 60.0
    }

    public struct AnalysisDefaults: Sendable {
        public var maxSide = 256
        public var skipNonReferenceFrames = true
        public var skipLoopFilter = true
        public var maxFrameRate: Double?
        public var audioSampleRate = 16_000
        /// auto | full | sampled (see DecodePlanSettings).
        public var decodePlan = "auto"
        /// Look for jump cuts too (two moments of one scene joined by a cut); off by default (see
        /// `ShotDetector.Settings.jumpCuts`).
        public var jumpCuts = false
    }

    public struct HighlightDefaults: Sendable {
        public var style = "cut"
        public var crossfadeSeconds = 0.25
    }

    public var render = Render()
    public var analysis = AnalysisDefaults()
    public var highlight = HighlightDefaults()
    public var weights = ScoreWeights()

    public init() {}

    public init(reader config: ConfigReader) {
        let r = config.scoped(to: "media")
        render.preset = r.string(forKey: "render.preset", default: render.preset)
        render.quality = r.string(forKey: "render.quality", default: render.quality)
        render.crossfadeSeconds = r.double(forKey: "render.crossfadeSeconds", default: render.crossfadeSeconds)
        render.audioFadeSeconds = r.double(forKey: "render.audioFadeSeconds", default: render.audioFadeSeconds)
        render.maxFrameRate = r.double(forKey: "render.maxFrameRate", default: render.maxFrameRate)
        analysis.maxSide = r.int(forKey: "analysis.maxSide", default: analysis.maxSide)
        analysis.skipNonReferenceFrames = r.bool(forKey: "analysis.skipNonReferenceFrames", default: analysis.skipNonReferenceFrames)
        analysis.skipLoopFilter = r.bool(forKey: "analysis.skipLoopFilter", default: analysis.skipLoopFilter)
        analysis.maxFrameRate = r.double(forKey: "analysis.maxFrameRate")
        analysis.audioSampleRate = r.int(forKey: "analysis.audioSampleRate", default: analysis.audioSampleRate)
        analysis.decodePlan = r.string(forKey: "analysis.decodePlan", default: analysis.decodePlan)
        analysis.jumpCuts = r.bool(forKey: "analysis.jumpCuts", default: analysis.jumpCuts)
        highlight.style = r.string(forKey: "highlight.style", default: highlight.style)
        highlight.crossfadeSeconds = r.double(forKey: "highlight.crossfadeSeconds", default: highlight.crossfadeSeconds)
        weights.motion = r.double(forKey: "weights.motion", default: weights.motion)
        weights.audio = r.double(forKey: "weights.audio", default: weights.audio)
        weights.quality = r.double(forKey: "weights.quality", default: weights.quality)
        weights.novelty = r.double(forKey: "weights.novelty", default: weights.novelty)
    }

    /// Reads Config/moments.json (or MOMENTS_CONFIG) and the environment.
    public static func load() async throws -> MediaDefaults {
        MediaDefaults(reader: try await MomentsConfiguration.reader())
    }

    /// The highlight engine's analysis settings (thresholds keep their documented defaults).
    public var analysisSettings: AnalysisSettings {
        var settings = AnalysisSettings()
        settings.maxSide = analysis.maxSide
        settings.skipNonReferenceFrames = analysis.skipNonReferenceFrames
        settings.skipLoopFilter = analysis.skipLoopFilter
        settings.maxFrameRate = analysis.maxFrameRate
        settings.audioSampleRate = analysis.audioSampleRate
        settings.plan.choice = DecodePlanSettings.Choice(rawValue: analysis.decodePlan) ?? .auto
        settings.shots.jumpCuts = analysis.jumpCuts
        return settings
    }

    public var analysisOptions: AnalysisOptions {
        var options = AnalysisOptions()
        options.maxSide = analysis.maxSide
        options.skipNonReferenceFrames = analysis.skipNonReferenceFrames
        options.skipLoopFilter = analysis.skipLoopFilter
        options.maxFrameRate = analysis.maxFrameRate
        options.audioSampleRate = analysis.audioSampleRate
        return options
    }

    /// A highlight request for `source` with these defaults; the caller sets output paths and target.
    public func request(source: String, quality: RenderQuality? = nil, style: HighlightStyle? = nil) -> HighlightRequest {
        var request = HighlightRequest(source: source)
        request.quality = quality ?? RenderQuality(rawValue: render.quality) ?? .high
        request.style = style ?? HighlightStyle(rawValue: highlight.style) ?? .cut
        request.crossfadeSeconds = highlight.crossfadeSeconds
        request.preset = render.preset
        request.audioFade = render.audioFadeSeconds
        request.maxFrameRate = render.maxFrameRate
        request.analysis = analysisSettings
        request.weights = weights
        return request
    }
}
