import Analysis
import Configuration
import Foundation
import Highlight
import MediaEngine

/// The media defaults a deployment edits under `media` in Config/moments.json. Command-line options
/// and API parameters override them; every key can also be set from the environment
/// (`media.render.preset` → `MEDIA_RENDER_PRESET`). Each default is the engine's own, declared once
/// in `HighlightRequest`, `AnalysisSettings` and `ScoreWeights`.
public struct MediaDefaults: Sendable, Equatable {
    /// The engine's request as configured, which `request(source:quality:style:)` starts from:
    /// `media.render.*` sets quality, preset, audioFade and maxFrameRate; `media.highlight.*` style
    /// and crossfadeSeconds; `media.analysis.*` the analysis; `media.weights.*` the scoring weights.
    public var template = HighlightRequest(source: "")
    /// `media.render.crossfadeSeconds`: the crossfade `moments render` puts at each join unless
    /// --crossfade says otherwise (a highlight's is `media.highlight.crossfadeSeconds`).
    public var renderCrossfadeSeconds = RenderRequest(source: "", segments: [], output: "").crossfade

    public init() {}

    public init(reader config: ConfigReader) {
        let media = config.scoped(to: "media")
        let render = media.scoped(to: "render")
        let quality = render.string(forKey: "quality", default: template.quality.rawValue)
        template.quality = RenderQuality(rawValue: quality) ?? .high
        render.read("preset", into: &template.preset)
        render.read("crossfadeSeconds", into: &renderCrossfadeSeconds)
        render.read("audioFadeSeconds", into: &template.audioFade)
        render.read("maxFrameRate", into: &template.maxFrameRate)
        let highlight = media.scoped(to: "highlight")
        let style = highlight.string(forKey: "style", default: template.style.rawValue)
        template.style = HighlightStyle(rawValue: style) ?? .cut
        highlight.read("crossfadeSeconds", into: &template.crossfadeSeconds)
        Self.read(media.scoped(to: "analysis"), into: &template.analysis)
        let weights = media.scoped(to: "weights")
        weights.read("motion", into: &template.weights.motion)
        weights.read("audio", into: &template.weights.audio)
        weights.read("quality", into: &template.weights.quality)
        weights.read("novelty", into: &template.weights.novelty)
        weights.read("people", into: &template.weights.people)
    }

    /// The `media.analysis.*` keys; thresholds not named here keep their documented defaults.
    static func read(_ r: ConfigReader, into analysis: inout AnalysisSettings) {
        r.read("maxSide", into: &analysis.maxSide)
        r.read("skipNonReferenceFrames", into: &analysis.skipNonReferenceFrames)
        r.read("skipLoopFilter", into: &analysis.skipLoopFilter)
        r.read("maxFrameRate", into: &analysis.maxFrameRate)
        r.read("audioSampleRate", into: &analysis.audioSampleRate)
        // auto | full | anchors | sampled (see DecodePlanSettings); another name is auto.
        let plan = r.string(forKey: "decodePlan", default: analysis.plan.choice.rawValue)
        analysis.plan.choice = DecodePlanSettings.Choice(rawValue: plan) ?? .auto
        // Jump cuts (two moments of one scene joined by a cut): see `ShotDetector.Settings.jumpCuts`.
        r.read("jumpCuts", into: &analysis.shots.jumpCuts)
        // Faces (FaceAnalyzer): looked for unless switched off; the detector's shared library.
        r.read("faces", into: &analysis.faces.enabled)
        r.read("faceLibrary", into: &analysis.faces.library)
    }

    /// Reads Config/moments.json (or MOMENTS_CONFIG) and the environment.
    public static func load() async throws -> MediaDefaults {
        MediaDefaults(reader: try await MomentsConfiguration.reader())
    }

    /// A highlight request for `source` with these defaults; the caller sets output paths and target.
    public func request(source: String, quality: RenderQuality? = nil, style: HighlightStyle? = nil) -> HighlightRequest
    {
        var request = template
        request.source = source
        if let quality { request.quality = quality }
        if let style { request.style = style }
        return request
    }
}
