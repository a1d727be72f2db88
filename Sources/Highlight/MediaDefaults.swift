import MediaEngine

/// The engine's defaults as a deployment configured them (the root maps `media.*` in
/// Config/moments.json onto them: `MediaConfig`). Command-line options and API parameters
/// override them. Each default is the engine's own, declared once in `HighlightRequest`,
/// `AnalysisSettings` and `ScoreWeights`.
public struct MediaDefaults: Sendable, Equatable {
    /// The engine's request as configured, which `request(source:quality:style:)` starts from:
    /// quality, preset, audio fade, frame rate, style, crossfade, the analysis and the weights.
    public var template = HighlightRequest(source: "")
    /// The crossfade `moments render` puts at each join unless --crossfade says otherwise (a
    /// highlight's is the template's).
    public var renderCrossfadeSeconds = RenderRequest(source: "", segments: [], output: "").crossfade

    public init() {}

    /// A highlight request for `source` with these defaults; the caller sets output paths and target.
    public func request(source: String, quality: RenderQuality? = nil, style: HighlightStyle? = nil) -> HighlightRequest
    {
        var request = template
        request.source = source
        if let quality { request.quality = quality }
        if let style { request.style = style }
        return request
    }

    /// Seconds of crossfade at each join of the highlights this service renders (0: hard cuts).
    public var crossfadeSeconds: Double {
        template.style == .crossfade ? template.crossfadeSeconds : 0
    }
}
