import Foundation
import MediaVocabulary

/// The integer frame layout every format is written from: each clip's source in/out snapped once
/// to the rate's frame grid, the dissolve length, and where each clip sits in the highlight.
///
/// Crossfades follow the renderer: a dissolve of `transitionFrames` frames blends the last frames
/// of one segment with the first frames of the next, so the highlight is
/// `sum(clip frames) - transitionFrames * joins` long and no media outside the chosen segments is
/// used. The visible cut of a join is placed in the middle of its dissolve
/// (`TimelinePlan.split`): formats whose clips abut at a cut point (FCPXML, OTIO) trim each clip
/// to the cut and let the transition use the trimmed frames as handles.
public struct TimelinePlan: Sendable, Equatable {
    /// One clip, in frames of `rate`.
    public struct Clip: Sendable, Equatable {
        /// First source frame used.
        public var sourceIn: Int
        /// One past the last source frame used.
        public var sourceOut: Int
        /// First highlight frame the clip's media is on screen (its incoming dissolve included).
        public var recordIn: Int
        /// One past the last highlight frame of its media (its outgoing dissolve included).
        public var recordOut: Int
        /// Frames dissolved with the previous / next clip (0 for hard cuts and at the ends).
        public var transitionIn: Int
        public var transitionOut: Int
        /// The validated crop window, if any.
        public var crop: CropWindow?

        /// Source frames used.
        public var frames: Int { sourceOut - sourceIn }
    }

    /// The document's rate in lowest terms (30/1 if it was invalid).
    public let rate: TimelineRate
    public let clips: [Clip]
    /// Frames of each dissolve (0 for hard cuts or a single clip).
    public let transitionFrames: Int
    /// Length of the highlight in frames.
    public let totalFrames: Int
    /// Length of the source in frames (at least as long as the last frame any clip uses).
    public let sourceFrames: Int

    /// Snaps a document to its frame grid.
    public init(_ document: TimelineDocument) {
        let rate = document.rate.reduced
        self.rate = rate
        let snapped: [(Int, Int, CropWindow?)] = document.clips.map { clip in
            let a = max(0, Self.frame(of: clip.start, rate: rate))
            let b = max(a + 1, Self.frame(of: clip.end, rate: rate))
            return (a, b, clip.crop?.sanitized)
        }
        var overlap = 0
        if snapped.count > 1 {
            overlap = max(0, Self.frame(of: document.crossfadeSeconds, rate: rate))
            // As the renderer does: a dissolve never takes more than half of any clip.
            overlap = min(overlap, snapped.map { ($0.1 - $0.0) / 2 }.min() ?? 0)
        }
        var clips: [Clip] = []
        var record = 0
        for (i, (a, b, crop)) in snapped.enumerated() {
            let tIn = i > 0 ? overlap : 0
            let tOut = i < snapped.count - 1 ? overlap : 0
            clips.append(
                Clip(
                    sourceIn: a, sourceOut: b, recordIn: record, recordOut: record + (b - a),
                    transitionIn: tIn, transitionOut: tOut, crop: crop))
            record += (b - a) - tOut
        }
        self.clips = clips
        transitionFrames = overlap
        totalFrames = clips.last?.recordOut ?? 0
        sourceFrames = max(Self.frame(of: document.sourceDuration, rate: rate), clips.map(\.sourceOut).max() ?? 0)
    }

    /// `seconds` rounded to the nearest frame of `rate` (0 for non-finite input).
    public static func frame(of seconds: Double, rate: TimelineRate) -> Int {
        let r = rate.reduced
        let value = seconds * Double(r.numerator) / Double(r.denominator)
        guard value.isFinite else { return 0 }
        return Int(max(-9.0e15, min(9.0e15, value)).rounded())
    }

    /// How a dissolve of `frames` is divided around its cut: `before` frames precede the cut
    /// point, `after` follow it (the extra frame of an odd length goes after).
    public static func split(_ frames: Int) -> (before: Int, after: Int) {
        (frames / 2, frames - frames / 2)
    }

    /// The part of clip `index` that is on screen alone up to the cuts, with FCPXML/OTIO
    /// semantics: source and record ranges trimmed to the cut points of its dissolves.
    func trimmed(_ index: Int) -> (sourceIn: Int, sourceOut: Int, recordIn: Int, recordOut: Int) {
        let c = clips[index]
        let head = Self.split(c.transitionIn).before
        let tail = Self.split(c.transitionOut).after
        return (c.sourceIn + head, c.sourceOut - tail, c.recordIn + head, c.recordOut - tail)
    }
}
