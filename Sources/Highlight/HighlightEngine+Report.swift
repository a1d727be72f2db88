import Analysis
import FFmpeg
import Foundation
import MediaEngine

/// What a highlight leaves beside itself for people and tools: the analysis report (JSON) and the
/// storyboard picture.
extension HighlightEngine {
    public static func makeReport(_ a: VideoAnalysis, scored: [ScoredCandidate], segments: [Segment])
        -> HighlightReport
    {
        var report = HighlightReport(
            duration: a.duration, fps: a.frameRate, cuts: a.cutFrames, boundaries: a.boundaries,
            shots: a.shots.map { TimeRange(start: $0.start, end: $0.end) },
            signals: HighlightReport.Signals(
                motion: a.perSecond(a.motion, time: \.time, value: \.subject),
                loudness: loudnessPerSecond(a),
                sharpness: a.perSecond(a.quality, time: \.time, value: \.sharpness)),
            candidates: scored.map {
                HighlightReport.CandidateEntry(
                    start: $0.candidate.start, end: $0.candidate.end, score: $0.score, components: $0.components)
            },
            segments: segments, posterTime: nil, decode: a.summary)
        report.faces = a.faces
        report.peopleMoments = a.faces.map { _ in segments.filter { $0.people == true }.count }
        return report
    }

    /// The storyboard's people lane: per second, the share of the looks that saw a face (none
    /// when faces were not looked for).
    static func peopleLane(_ a: VideoAnalysis) -> [StoryboardCurve] {
        guard let faces = a.faces, faces.unavailable == nil else { return [] }
        let seconds = max(1, Int(a.duration.rounded(.up)))
        let values = (0..<seconds).map { k -> Float in
            let p = faces.presence(from: Double(k), to: Double(k + 1))
            return p.looks > 0 ? Float(p.withFaces) / Float(p.looks) : 0
        }
        return [StoryboardCurve(label: "people", color: .people, values: values)]
    }

    static func loudnessPerSecond(_ a: VideoAnalysis) -> [Float] {
        let perSecond = max(1, Int((1 / a.audio.tick).rounded()))
        return stride(from: 0, to: a.audio.loudness.count, by: perSecond).map { i in
            let slice = a.audio.loudness[i..<min(a.audio.loudness.count, i + perSecond)]
            return slice.reduce(0, +) / Float(slice.count)
        }
    }

    /// The analysis report as the job's JSON (snake_case keys, sorted).
    static func writeReport(_ report: HighlightReport, to path: String) throws(MediaError) {
        let encoder = JSONEncoder()
        encoder.keyEncodingStrategy = .convertToSnakeCase
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        do {
            try encoder.encode(report).write(to: URL(fileURLWithPath: path), options: .atomic)
        } catch {
            throw MediaError(
                .io, operation: "write analysis", path: path,
                detail: "cannot write the analysis: \(error.localizedDescription)")
        }
    }

    /// The storyboard: a filmstrip of the input, the per-second motion (scaled to its 95th
    /// percentile), loudness (-60...0 dBFS) and sharpness, the shot cuts and the chosen segments.
    /// A picture that cannot be made does not fail the highlight (cancellation does).
    static func writeStoryboard(
        _ a: VideoAnalysis, report: HighlightReport, source: String, to path: String,
        limits: DecodeLimits, cancellation: CancellationToken?
    ) throws(MediaError) {
        let spec = storyboardSpec(a, report: report)
        do {
            try Storyboard.write(source: source, spec: spec, to: path, limits: limits, cancellation: cancellation)
        } catch  where error.kind == .cancelled {
            throw error
        } catch {
            try? FileManager.default.removeItem(atPath: path)
        }
    }

    /// Where the storyboard's filmstrip sits (its layout needs no decoding: the row's place does
    /// not depend on the picture's shape).
    static func storyboardFrame(_ a: VideoAnalysis, report: HighlightReport) -> StoryboardFrame {
        StoryboardFrame(
            Storyboard.layout(for: storyboardSpec(a, report: report), displayWidth: a.width, displayHeight: a.height))
    }

    /// What the storyboard shows: the curves, the cuts and the chosen segments.
    static func storyboardSpec(_ a: VideoAnalysis, report: HighlightReport) -> StoryboardSpec {
        let motion = report.signals.motion
        let scale =
            motion.isEmpty ? 1 : max(1e-3, motion.sorted()[min(motion.count - 1, Int(Double(motion.count) * 0.95))])
        return StoryboardSpec(
            duration: a.duration,
            curves: [
                StoryboardCurve(label: "motion", color: .motion, values: motion.map { min(1, $0 / scale) }),
                StoryboardCurve(
                    label: "loudness", color: .loudness,
                    values: report.signals.loudness.map { (min(0, max(-60, $0)) + 60) / 60 }),
                StoryboardCurve(
                    label: "quality", color: .quality, values: report.signals.sharpness.map { min(1, max(0, $0)) })
            ] + peopleLane(a),
            cuts: a.boundaries.map(\.time),
            segments: report.segments.map { TimeRange(start: $0.start, end: $0.end) })
    }
}

extension StoryboardFrame {
    /// Where `layout` puts the filmstrip: the row's height, and its width between the time axis's ends.
    init(_ layout: StoryboardLayout) {
        self.init(
            width: layout.width, height: layout.height,
            filmstrip: Box(
                x: layout.plotLeft, y: layout.filmstrip.y, width: layout.plotRight - layout.plotLeft,
                height: layout.filmstrip.height))
    }
}
