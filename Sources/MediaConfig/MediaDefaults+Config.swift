import Analysis
import Configuration
import Highlight
import MediaEngine
import MomentsConfig

/// The `media` section of Config/moments.json (and the environment: `media.render.preset` →
/// `MEDIA_RENDER_PRESET`) mapped onto the engine's defaults. Settings know no engine; this module,
/// used by the composition root, is where the two meet.
extension MediaDefaults {
    /// `media.render.*` sets quality, preset, crossfadeSeconds (`moments render`'s), audioFade and
    /// maxFrameRate; `media.highlight.*` style and crossfadeSeconds; `media.analysis.*` the
    /// analysis; `media.weights.*` the scoring weights.
    public init(reader config: ConfigReader) {
        self.init()
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
}
