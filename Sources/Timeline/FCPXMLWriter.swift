import Foundation

/// Writes a Final Cut Pro XML 1.10 document: one asset (the original upload), one project whose
/// spine holds an `asset-clip` per segment, `transition`s (Cross Dissolve, plus Audio Crossfade
/// when there is audio) at crossfaded joins, and the reframe as `adjust-conform` "fit" followed by
/// `adjust-transform`.
///
/// Every time is a whole number of frames written as a reduced rational of seconds
/// (`frames * den / num`, e.g. `1001/30000s`). A dissolve follows FCPXML's model: spine clips abut
/// at the cut in the middle of the dissolve and the `transition` (offset = where the dissolve
/// starts, duration = its frames) overlaps both, using the frames trimmed off each clip as its
/// handles, so Final Cut plays exactly the source frames the rendered highlight used.
struct FCPXMLWriter {
    let document: TimelineDocument
    let plan: TimelinePlan

    /// Final Cut Pro's built-in Cross Dissolve video transition.
    static let crossDissolveUID = "FxPlug:4731E73A-8DAC-4113-9A30-AE85B1761265"
    /// Final Cut Pro's built-in audio crossfade.
    static let audioCrossfadeUID = "FFAudioTransition"

    init(_ document: TimelineDocument) {
        self.document = document
        plan = TimelinePlan(document)
    }

    /// `frames` at `rate` as an FCPXML time: `0s`, `3s`, `1001/30000s`.
    static func time(_ frames: Int, rate: TimelineRate) -> String {
        let r = rate.reduced
        let numerator = frames * r.denominator
        if numerator == 0 { return "0s" }
        let g = greatestCommonDivisor(numerator, r.numerator)
        let n = numerator / g, d = r.numerator / g
        return d == 1 ? "\(n)s" : "\(n)/\(d)s"
    }

    /// Resource ids, in document order: the source's own format comes only when its size differs.
    struct ResourceIDs {
        let sequenceFormat = "r1"
        let sourceFormat, asset, dissolve, audioFade: String

        init(sameSize: Bool) {
            sourceFormat = sameSize ? "r1" : "r2"
            asset = sameSize ? "r2" : "r3"
            dissolve = sameSize ? "r3" : "r4"
            audioFade = sameSize ? "r4" : "r5"
        }
    }

    private func t(_ frames: Int) -> String { Self.time(frames, rate: plan.rate) }
    private var tcFormat: String { plan.rate.isDropFrame ? "DF" : "NDF" }
    private var sameSize: Bool {
        document.sourceWidth == document.outputWidth && document.sourceHeight == document.outputHeight
    }

    func render() -> String {
        let ids = ResourceIDs(sameSize: sameSize)
        var x = XMLText()
        x.raw("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<!DOCTYPE fcpxml>\n\n")
        x.open("fcpxml", [("version", "1.10")])
        writeResources(into: &x, ids)
        x.open("library")
        x.open("event", [("name", "Moments")])
        x.open("project", [("name", document.title)])
        let sequenceAudio = document.hasAudio ? [("audioLayout", "stereo"), ("audioRate", "48k")] : []
        x.open(
            "sequence",
            [
                ("format", ids.sequenceFormat), ("duration", t(plan.totalFrames)), ("tcStart", "0s"),
                ("tcFormat", tcFormat)
            ] + sequenceAudio)
        x.open("spine")
        for (i, clip) in plan.clips.enumerated() { writeClip(i, clip, into: &x, ids) }
        for name in ["spine", "sequence", "project", "event", "library", "fcpxml"] { x.close(name) }
        return x.text
    }

    /// The formats, the asset (the original upload) and the transitions' effects.
    private func writeResources(into x: inout XMLText, _ ids: ResourceIDs) {
        let url = document.sourceURL ?? TextEscaping.fileURL(forName: document.sourceName)
        let audio: [(String, String)] =
            document.hasAudio ? [("hasAudio", "1"), ("audioSources", "1")] : [("hasAudio", "0")]
        x.open("resources")
        x.empty(
            "format",
            [
                ("id", ids.sequenceFormat), ("frameDuration", t(1)),
                ("width", "\(max(1, document.outputWidth))"), ("height", "\(max(1, document.outputHeight))")
            ])
        if !sameSize {
            x.empty(
                "format",
                [
                    ("id", ids.sourceFormat), ("frameDuration", t(1)),
                    ("width", "\(max(1, document.sourceWidth))"), ("height", "\(max(1, document.sourceHeight))")
                ])
        }
        x.open(
            "asset",
            [
                ("id", ids.asset), ("name", document.sourceName), ("start", "0s"), ("duration", t(plan.sourceFrames)),
                ("hasVideo", "1"), ("format", ids.sourceFormat), ("videoSources", "1")
            ] + audio)
        x.empty("media-rep", [("kind", "original-media"), ("src", url)])
        x.close("asset")
        if plan.transitionFrames > 0 {
            x.empty("effect", [("id", ids.dissolve), ("name", "Cross Dissolve"), ("uid", Self.crossDissolveUID)])
            if document.hasAudio {
                x.empty("effect", [("id", ids.audioFade), ("name", "Audio Crossfade"), ("uid", Self.audioCrossfadeUID)])
            }
        }
        x.close("resources")
    }

    /// One spine clip: the dissolve into it (if any), then the clip with its reframe.
    private func writeClip(_ i: Int, _ clip: TimelinePlan.Clip, into x: inout XMLText, _ ids: ResourceIDs) {
        if clip.transitionIn > 0 {
            x.open(
                "transition",
                [("name", "Cross Dissolve"), ("offset", t(clip.recordIn)), ("duration", t(clip.transitionIn))])
            x.empty("filter-video", [("ref", ids.dissolve), ("name", "Cross Dissolve")])
            if document.hasAudio { x.empty("filter-audio", [("ref", ids.audioFade), ("name", "Audio Crossfade")]) }
            x.close("transition")
        }
        let cut = plan.trimmed(i)
        let attributes = [
            ("ref", ids.asset), ("offset", t(cut.recordIn)), ("name", document.sourceName),
            ("start", t(cut.sourceIn)), ("duration", t(cut.sourceOut - cut.sourceIn)),
            ("format", ids.sourceFormat), ("tcFormat", tcFormat)
        ]
        guard let crop = clip.crop else {
            x.empty("asset-clip", attributes)
            return
        }
        let reframe = Reframe(
            crop: crop, sourceWidth: document.sourceWidth, sourceHeight: document.sourceHeight,
            outputWidth: document.outputWidth, outputHeight: document.outputHeight)
        let scale = TextEscaping.decimal(reframe.scale, digits: 6)
        x.open("asset-clip", attributes)
        x.empty("adjust-conform", [("type", "fit")])
        x.empty(
            "adjust-transform",
            [
                (
                    "position",
                    "\(TextEscaping.decimal(reframe.positionX)) \(TextEscaping.decimal(reframe.positionY))"
                ),
                ("scale", "\(scale) \(scale)")
            ])
        x.close("asset-clip")
    }
}

/// An indented XML document built element by element; attribute values are escaped.
struct XMLText {
    private(set) var text = ""
    private var depth = 0

    mutating func raw(_ s: String) { text += s }

    mutating func open(_ name: String, _ attributes: [(String, String)] = []) {
        line("<\(name)\(Self.attributes(attributes))>")
        depth += 1
    }

    mutating func empty(_ name: String, _ attributes: [(String, String)] = []) {
        line("<\(name)\(Self.attributes(attributes))/>")
    }

    mutating func close(_ name: String) {
        depth -= 1
        line("</\(name)>")
    }

    private mutating func line(_ s: String) {
        text += String(repeating: "    ", count: max(0, depth)) + s + "\n"
    }

    private static func attributes(_ pairs: [(String, String)]) -> String {
        pairs.map { " \($0.0)=\"\(TextEscaping.xmlAttribute($0.1))\"" }.joined()
    }
}
