import Analysis
import FFmpeg
import MediaEngine

/// Judges each jump cut the anchors pass found again, on every frame around it.
///
/// The anchors pass sees I- and P-frames only, so its jump measures compare pictures two to four
/// frames apart: a subject's own motion over that step, a whip pan's blur or fire's flicker then
/// spikes like a jump (on the held-out half of `scripts/bench-analysis`' hard set, two false jumps
/// that every-frame analysis does not make: a rocket launch's smoke and a screen recording's
/// whip pan). Each jump's surroundings are decoded in full, a fresh `ShotDetector` with the same
/// settings decides on them, and the jump stays only where it finds one too, on the frame it finds.
/// Surroundings that overlap are decoded once, as one range, so however many jumps a video has,
/// no frame is decoded twice here. The anchors pass also offers frames that pass the jump rules
/// with a lower spike ratio (`candidateLocalRatio`): judged on every frame
/// the same way, they find jumps its steps hide.
enum JumpConfirmation {
    /// Seconds decoded on each side of a jump, at least: the detector's decision at a frame needs
    /// `adaptiveWindow` frames on each side for its neighbours' mean, `jumpHistoryFrames` on each
    /// side for the change history and `burstFrames` after it for the return test.
    static let marginSeconds = 1.0
    /// How far (frames) the every-frame jump may lie from where the anchors pass put it: a step
    /// spans up to three skipped B-frames.
    static let toleranceFrames = 4.0
    /// The 32x32-cell spike ratio the anchors pass's candidates need (`ShotDetector.jumpCandidates`;
    /// every other jump rule, the evidence too, as set), below the every-frame 3.5: over steps of
    /// four frames a subject's own motion raises the neighbours' mean. Measured on the tune hard
    /// set: two walkers' jumps the full plan finds spike 2.76x and 3.20x over their anchor
    /// neighbours. The fine grid's ratio is not lowered: there the walkers' jumps (2.84x, 4.10x)
    /// sit among the tune shots set's false candidates (2.52-3.21x), each a second of frames on
    /// either side decoded for nothing.
    static let candidateLocalRatio: Float = 2.5

    static func confirm(
        _ boundaries: [ShotBoundary], decoder: AnalysisDecoder, settings: ShotDetector.Settings,
        frameRate: Double
    ) throws(MediaError) -> (boundaries: [ShotBoundary], ranges: Int, frames: Int) {
        let jumps = boundaries.filter { $0.kind == .jump }.map(\.time).sorted()
        guard !jumps.isEmpty else { return (boundaries, 0, 0) }
        let rate = frameRate.isFinite ? min(max(frameRate, 1), ShotDetector.maxRingFrameRate) : 30
        let frame = 1 / rate
        let needed = Double(settings.adaptiveWindow + settings.jumpHistoryFrames + settings.burstFrames + 2) * frame
        let margin = max(marginSeconds, needed)
        // Each range: its span and the jumps inside it.
        var ranges: [TimeRange] = []
        var members: [[Double]] = []
        for t in jumps {
            if let last = ranges.last, t - margin <= last.end {
                ranges[ranges.count - 1].end = t + margin
                members[members.count - 1].append(t)
            } else {
                ranges.append(TimeRange(start: max(0, t - margin), end: t + margin))
                members.append([t])
            }
        }
        var confirmed: [ShotBoundary] = []
        var detector: ShotDetector?
        var current = -1
        var features = FrameFeatures()
        features.measuresTexture = true
        func close() {
            guard let d = detector, current >= 0 else { return }
            let found = d.finish().filter { $0.kind == .jump || $0.kind == .cut }
            for t in members[current] {
                let near = found.filter { abs($0.time - t) <= toleranceFrames * frame + 1e-6 }
                if let b = near.min(by: { abs($0.time - t) < abs($1.time - t) }) { confirmed.append(b) }
            }
            detector = nil
        }
        let summary = try decoder.runRanges(ranges) { f in
            if f.group != current {
                close()
                current = f.group
                detector = ShotDetector(settings: settings, maxFrameRate: rate)
            }
            guard let view = f.view else { return }
            features.measure(view)
            detector?.consume(features)
        }
        close()
        let kept = boundaries.filter { $0.kind != .jump } + confirmed
        let judged = ShotDetector.keepStrongest(kept, minShotSeconds: settings.minShotSeconds)
        return (judged, ranges.count, summary.framesDecoded)
    }
}
