@_exported import AnalysisDecode
@_exported import MediaPictures
import Analysis
import FFmpeg
import Foundation
import MediaEngine

/// The analysis JSON: what was found and what was chosen.
public struct HighlightReport: Sendable, Codable, Equatable {
    public struct Signals: Sendable, Codable, Equatable {
        /// Per second: subject motion (picture widths per second), loudness (dBFS), sharpness (1 = the video's sharp frames).
        public var motion: [Float]
        public var loudness: [Float]
        public var sharpness: [Float]
    }
    public struct CandidateEntry: Sendable, Codable, Equatable {
        public var start: Double
        public var end: Double
        public var score: Double
        public var components: ScoredCandidate.Components
    }

    public var duration: Double
    public var fps: Double
    /// 0-based index of the first frame of each new shot.
    public var cuts: [Int]
    public var boundaries: [ShotBoundary]
    public var shots: [TimeRange]
    public var signals: Signals
    public var candidates: [CandidateEntry]
    /// The chosen ranges in source seconds, chronological.
    public var segments: [Segment]
    /// Output time of the poster frame, when a highlight was rendered.
    public var posterTime: Double?
    /// True when the poster is the earlier highlight's (a re-upload whose best frame is the one it shows).
    public var posterReused: Bool?
    /// True when no storyboard was drawn because the earlier highlight's stands for this one (a
    /// returned highlight of a copy on the same timeline): the caller copies it.
    public var storyboardReused: Bool?
    /// Where the storyboard picture's filmstrip sits, so a page can show that row alone (the studio's
    /// timeline background); nil when no storyboard was drawn or copied.
    public var storyboard: StoryboardFrame?
    /// How the input was decoded for the analysis: the plan, frames decoded and analysed, ranges refined.
    public var decode: AnalysisSummary?
    /// The crop to another shape, when the highlight was reframed (one track per segment).
    public var reframe: Reframe?
    /// True when the analysis was not made for this highlight but reused (a re-cut, a re-upload, or the cache).
    public var analysisReused: Bool?
    /// The earlier upload of the account this video was recognised as.
    public var duplicateOf: ReuploadMatch?
    /// The faces found (times, boxes, sizes, scores; nothing that identifies anyone), and how many
    /// of the chosen segments are people moments.
    public var faces: FaceTracks?
    public var peopleMoments: Int?
    /// `quality=original`: whether the pictures were copied or encoded, and why.
    public var render: RenderChoice?
}

/// A re-upload's analysis taken from the earlier upload it was recognised as (no analysis decode).
public struct AnalysisReuse: Sendable, Codable, Equatable {
    /// The earlier job's stored analysis (its `analysis-data.json`), copied into this job's folder.
    public var analysisPath: String
    public var match: ReuploadMatch
    public var target: ReuseTarget
    /// The earlier highlight's segments (earlier video's seconds), when the same highlight was asked
    /// for: selection and render are skipped when they all lie inside the new video.
    public var copySegments: [Segment]?
    /// The earlier highlight's file, copied into this job's folder when the same highlight was asked
    /// for but some of its footage is not in the new video: the segments the new highlight shares
    /// with it are copied from it, not encoded again.
    public var earlierResult: String?
    /// The earlier highlight's poster, fetched with `earlierResult`: when the new highlight's best
    /// frame is the one the earlier poster shows, the poster is this file (no decode).
    public var earlierPoster: String?
    /// The new video starts and ends where the earlier one did: when the earlier highlight is
    /// returned, its storyboard is this one's too (the caller copies it; none is drawn).
    public var sameTimeline = false

    public init(
        analysisPath: String, match: ReuploadMatch, target: ReuseTarget, copySegments: [Segment]?,
        earlierResult: String? = nil, earlierPoster: String? = nil, sameTimeline: Bool = false
    ) {
        self.analysisPath = analysisPath; self.match = match; self.target = target; self.copySegments = copySegments
        self.earlierResult = earlierResult; self.earlierPoster = earlierPoster; self.sameTimeline = sameTimeline
    }
}

public enum HighlightStyle: String, Sendable, Codable, CaseIterable {
    /// Hard cuts between segments.
    case cut
    /// A short crossfade at each join.
    case crossfade
}

/// Everything one highlight needs. Codable as it is: the job's isolated child receives it as JSON,
/// where an absent optional field decodes as nil and an unknown field is ignored.
public struct HighlightRequest: Sendable, Codable, Equatable {
    public var source: String
    public var output: String?
    public var quality: RenderQuality = .high
    public var style: HighlightStyle = .cut
    /// Crossfade length when `style` is `.crossfade`.
    public var crossfadeSeconds = 0.25
    public var preset = "veryfast"
    /// Seconds of audio fade at each hard join and at the ends of the highlight.
    public var audioFade = 0.010
    /// Output frame rate cap.
    public var maxFrameRate = 60.0
    public var analysisOutput: String?
    public var posterOutput: String?
    /// Where analyses are cached; nil: no cache.
    public var cacheDirectory: String?
    /// Where a new analysis is written for the cache; nil: `cacheDirectory` itself.
    public var cacheOutputDirectory: String?
    /// The job's own copy of its analysis: reused when the file is there (a re-cut: no analysis
    /// decode), written there otherwise, so later re-cuts of the job can reuse it.
    public var analysisData: String?
    /// Where the storyboard (filmstrip, score curves, chosen segments) is written as PNG; nil: none.
    public var storyboardOutput: String?
    /// A re-upload recognised before the analysis: its earlier analysis, shifted, replaces the decode.
    public var reuse: AnalysisReuse?
    /// A JSON file of `[ReuploadCandidate]` the new analysis' fingerprint is judged against (when
    /// the cheap look could not decide): a match shows as `duplicateOf`, and one asking for the
    /// same highlight returns the earlier highlight's segments without a render.
    public var reuploadCandidates: String?
    /// The shape of the highlight, and how the crop window follows the picture.
    public var aspect: AspectRatio = .source
    public var reframe = ReframeSettings()
    /// What the highlight favours: people first (`auto`), people above all, or action.
    public var focus: HighlightFocus = .auto
    public var analysis = AnalysisSettings()
    public var weights = ScoreWeights()
    public var selection = SelectionSettings()
    /// `quality=original`: copy the source's coded pictures where the highlight allows (else the
    /// pictures are encoded at `quality`); nil: encode.
    public var original: OriginalSettings?

    /// Bounds on the decoded source, for the analysis and the render alike (stored in
    /// `analysis.limits`): set `maxDecodedSeconds` to the plan's duration cap.
    public var limits: DecodeLimits {
        get { analysis.limits }
        set { analysis.limits = newValue }
    }

    public init(source: String) { self.source = source }
}

public struct HighlightResult: Sendable {
    public var report: HighlightReport
    public var render: RenderResult?
    public var cached: Bool
    /// The input's content fingerprint, when this run analysed it (or found it in the cache).
    public var fingerprint: ContentFingerprint?
}

/// Analysis (one decode pass, cached) -> candidates and scores -> selection -> render and poster.
public enum HighlightEngine {
    /// The highlight lengths the engine makes, in seconds: the one home of the bounds. A service
    /// accepts a range inside it (`upload.minTargetDuration`, `upload.maxTargetDuration`: 5 to 180
    /// by default); start-up refuses settings outside it.
    public static let minTarget = 5.0
    public static let maxTarget = 600.0

    /// The analysis of `path`, from the cache when it has one for these settings.
    public static func analyze(
        _ path: String, settings: AnalysisSettings, cacheDirectory: String?, cacheOutput: String? = nil,
        cancellation: CancellationToken? = nil,
        progress: ((Double) -> Void)? = nil
    ) throws(MediaError) -> (VideoAnalysis, cached: Bool) {
        var key: String?
        let cache = cacheDirectory.map { AnalysisCache(directory: $0, storeDirectory: cacheOutput) }
        if let cache {
            key = try cache.key(for: path, settings: settings)
            // An analysis made while the face detector was missing is made again once it is there.
            if let key, let hit = cache.load(key: key), !hit.lacksFaces(settings.faces) { return (hit, true) }
        }
        let analysis = try AnalysisPipeline.analyze(
            path, settings: settings, cancellation: cancellation, progress: progress)
        if let cache, let key { cache.store(analysis, key: key) }
        return (analysis, false)
    }

    /// Runs the whole chain. `progress` gets a stage name and the overall fraction (0...1).
    public static func make(
        _ request: HighlightRequest, cancellation: CancellationToken? = nil,
        progress: ((String, Double) -> Void)? = nil
    ) throws(MediaError) -> HighlightResult {
        let target = request.selection.targetDuration
        guard target >= minTarget && target <= maxTarget else {
            throw MediaError(
                .invalidRange, operation: "highlight", path: request.source,
                detail: "the target duration must be between \(Int(minTarget)) and \(Int(maxTarget)) seconds")
        }
        progress?("analysing", 0)
        let obtained = try obtainAnalysis(request, cancellation: cancellation, progress: progress)
        let analysis = obtained.analysis
        try cancellation?.check("highlight", path: request.source)
        progress?("selecting", 0.6)
        let scored = Scoring.score(
            analysis.candidates, weights: request.weights.focused(request.focus), hasAudio: analysis.hasAudio)
        var selection = request.selection
        if request.focus == .action { selection.peopleScenesFirst = false }
        selection.crossfade = request.style == .crossfade ? request.crossfadeSeconds : 0
        // The same highlight of the same footage: the earlier one is returned (its file is copied by the caller).
        var segments = obtained.copied ?? Selector.select(analysis, scored: scored, settings: selection)
        guard !segments.isEmpty else {
            throw MediaError(
                .unusable, operation: "highlight", path: request.source,
                detail: "no usable footage: the video is black, frozen, blurred or too short throughout")
        }
        var copy: CopyDecision?
        if let original = request.original, request.output != nil, obtained.copied == nil {
            copy = try decideCopy(
                request, settings: original, analysis: analysis, segments: segments, selection: selection,
                cancellation: cancellation)
            segments = copy?.segments ?? segments
        }
        var report = makeReport(analysis, scored: scored, segments: segments)
        report.render = copy?.choice
        report.analysisReused = obtained.cached
        if var match = obtained.duplicate {
            match.resultCopied = obtained.copied != nil
            report.duplicateOf = match
        }
        report.reframe = Reframer.plan(
            analysis, segments: segments.map { TimeRange(start: $0.start, end: $0.end) },
            aspect: request.aspect, settings: request.reframe)
        // The storyboard needs the moments, not the render: it is drawn beside it (the render alone
        // rarely keeps both cores busy), and waited for before anything is returned or thrown.
        var storyboard: SideThread?
        if obtained.copied != nil, request.reuse?.sameTimeline == true {
            report.storyboardReused = true
            report.storyboard = storyboardFrame(analysis, report: report)
        } else if let path = request.storyboardOutput {
            let (drawn, source, limits) = (report, request.source, request.limits)
            storyboard = SideThread(name: "moments-storyboard") { () throws(MediaError) in
                try writeStoryboard(
                    analysis, report: drawn, source: source, to: path, limits: limits, cancellation: cancellation)
            }
        }
        var render: RenderResult?
        do throws(MediaError) {
            if let output = request.output, obtained.copied == nil {
                render = try renderWithPoster(
                    request, to: output, segments: segments, crossfade: selection.crossfade, copyFrom: copy?.table,
                    obtained: obtained, report: &report, cancellation: cancellation, progress: progress)
            }
        } catch {
            try? storyboard?.wait()
            throw error
        }
        if let storyboard, let path = request.storyboardOutput {
            progress?("storyboard", 0.98)
            try storyboard.wait()
            if FileManager.default.fileExists(atPath: path) { report.storyboard = storyboardFrame(analysis, report: report) }
        }
        if let path = request.analysisOutput { try writeReport(report, to: path) }
        progress?("done", 1)
        return HighlightResult(
            report: report, render: render, cached: obtained.cached, fingerprint: obtained.fingerprint)
    }

    /// A job's analysis and what it says of an earlier upload.
    struct ObtainedAnalysis {
        var analysis: VideoAnalysis
        /// Not decoded here: the earlier upload's, the stored one, or the cache's.
        var cached: Bool
        var duplicate: ReuploadMatch?
        /// The earlier highlight's moments, in this video's seconds, when it is returned as it is.
        var copied: [Segment]?
        var fingerprint: ContentFingerprint?
        /// The earlier poster's frame (earlier video's seconds), when its picture may stand for this one's.
        var earlierPoster: (path: String, time: Double)?
    }

    /// The analysis: the earlier upload's in this video's seconds (a re-upload, no decode), the
    /// job's stored one, or a new one (cached, stored, and judged against the candidates).
    static func obtainAnalysis(
        _ request: HighlightRequest, cancellation: CancellationToken?,
        progress: ((String, Double) -> Void)?
    ) throws(MediaError) -> ObtainedAnalysis {
        if let reuse = request.reuse, let earlier = loadAnalysis(reuse.analysisPath) {
            let analysis = earlier.reused(for: reuse.target, minCandidate: request.analysis.candidates.minSeconds)
            var obtained = ObtainedAnalysis(analysis: analysis, cached: true, duplicate: reuse.match)
            obtained.copied = reuse.copySegments.flatMap {
                ReuploadRecognizer.copiedSegments($0, offset: reuse.match.offset, duration: analysis.duration)
            }
            if let path = reuse.earlierPoster, let segments = reuse.copySegments,
                let frame = posterFrame(earlier, segments: segments)
            {
                obtained.earlierPoster = (path, frame.time)
            }
            if let path = request.analysisData { storeAnalysis(analysis, at: path) }
            return obtained
        }
        if let path = request.analysisData, let stored = loadAnalysis(path) {
            return ObtainedAnalysis(analysis: stored, cached: true)
        }
        let (analysis, cached) = try analyze(
            request.source, settings: request.analysis, cacheDirectory: request.cacheDirectory,
            cacheOutput: request.cacheOutputDirectory, cancellation: cancellation
        ) { progress?("analysing", $0 * 0.6) }
        if let path = request.analysisData { storeAnalysis(analysis, at: path) }
        var obtained = ObtainedAnalysis(analysis: analysis, cached: cached, fingerprint: analysis.fingerprint)
        if let path = request.reuploadCandidates, let fingerprint = analysis.fingerprint,
            let candidates = loadCandidates(path)
        {
            let judged = ReuploadRecognizer.judge(fingerprint, candidates: candidates, duration: analysis.duration)
            if let match = judged.match {
                obtained.duplicate = match
                obtained.copied = candidates.first { $0.jobId == match.jobId }?.copySegments.flatMap {
                    ReuploadRecognizer.copiedSegments($0, offset: match.offset, duration: analysis.duration)
                }
            }
        }
        return obtained
    }

    /// Renders the chosen moments (copying what an earlier render of them has, and everything
    /// encoded when that copy fails), then the poster: the earlier one when it shows this very frame.
    static func renderWithPoster(
        _ request: HighlightRequest, to output: String, segments: [Segment], crossfade: Double,
        copyFrom table: PacketTable?, obtained: ObtainedAnalysis, report: inout HighlightReport, cancellation: CancellationToken?,
        progress: ((String, Double) -> Void)?
    ) throws(MediaError) -> RenderResult {
        var renderRequest = RenderRequest(
            source: request.source, segments: segments.map { TimeRange(start: $0.start, end: $0.end) },
            output: output)
        renderRequest.quality = request.quality
        renderRequest.crossfade = crossfade
        renderRequest.preset = request.preset
        renderRequest.audioFade = request.audioFade
        renderRequest.maxFrameRate = request.maxFrameRate
        renderRequest.limits = request.limits
        renderRequest.reframe = report.reframe
        if let reuse = request.reuse, let earlier = reuse.earlierResult, let copy = reuse.copySegments {
            renderRequest.reuse = RenderReuse(
                path: earlier,
                segments: copy.map {
                    TimeRange(start: $0.start - reuse.match.offset, end: $0.end - reuse.match.offset)
                })
        }
        progress?("rendering", 0.6)
        let advance: (Double) -> Void = { progress?("rendering", 0.6 + 0.37 * $0) }
        let result: RenderResult
        if let table {
            result = try CopyRenderer.render(renderRequest, table: table, cancellation: cancellation, progress: advance)
        } else if renderRequest.reuse != nil {
            do {
                result = try Renderer.render(renderRequest, cancellation: cancellation, progress: advance)
            } catch where error.kind != .cancelled {
                // Copying from the earlier highlight failed: everything is encoded.
                renderRequest.reuse = nil
                result = try Renderer.render(renderRequest, cancellation: cancellation, progress: advance)
            }
        } else {
            result = try Renderer.render(renderRequest, cancellation: cancellation, progress: advance)
        }
        guard let poster = request.posterOutput else { return result }
        progress?("poster", 0.97)
        let analysis = obtained.analysis
        let frame = posterFrame(analysis, segments: segments)
        let time = frame.map { posterOutputTime($0, segments: segments, outputSegments: result.outputSegments) } ?? 0
        // The earlier highlight's poster shows this very frame: it is this poster too.
        let halfFrame = 0.5 / max(1, analysis.frameRate)
        if let frame, let earlierPoster = obtained.earlierPoster, let offset = obtained.duplicate?.offset,
            abs(frame.time + offset - earlierPoster.time) < halfFrame, copyFile(earlierPoster.path, to: poster)
        {
            report.posterReused = true
        } else {
            try Poster.write(from: output, at: time, to: poster)
        }
        report.posterTime = time
        return result
    }

    /// The re-upload candidates the worker wrote; nil when unreadable (then nothing is recognised).
    static func loadCandidates(_ path: String) -> [ReuploadCandidate]? {
        guard let data = FileManager.default.contents(atPath: path) else { return nil }
        return try? JSONDecoder().decode([ReuploadCandidate].self, from: data)
    }

    /// A job's stored analysis; nil when there is none or it cannot be read (then it is made again).
    static func loadAnalysis(_ path: String) -> VideoAnalysis? {
        guard let data = FileManager.default.contents(atPath: path) else { return nil }
        return try? JSONDecoder().decode(VideoAnalysis.self, from: data)
    }

    /// Best effort, as the cache: without it a re-cut analyses again (a value JSON cannot hold, a
    /// full disk), the highlight itself does not fail.
    static func storeAnalysis(_ analysis: VideoAnalysis, at path: String) {
        guard let data = try? JSONEncoder().encode(analysis) else { return }
        try? data.write(to: URL(fileURLWithPath: path), options: .atomic)
    }

    /// The best-looking frame of the segments (sharp, well exposed, lively): its segment and its
    /// source time. Nil when no segment has a measured frame away from its ends.
    static func posterFrame(_ a: VideoAnalysis, segments: [Segment]) -> (segment: Int, time: Double)? {
        var best: (segment: Int, time: Double, value: Float)?
        for (i, s) in segments.enumerated() {
            // The largest face of each look in the segment: a sharp frame with a large frontal face wins.
            let faces = a.faces?.boxes(from: s.start, to: s.end) ?? []
            for q in a.quality where q.time >= s.start + 0.2 && q.time < s.end - 0.2 && !q.isDefect {
                let motion = a.motion.first { $0.time >= q.time }?.subject ?? 0
                let face = faces.filter { abs($0.time - q.time) <= 0.26 }.max { $0.height < $1.height }
                let facing = face.map { $0.frontal * min(1, $0.height / 0.15) } ?? 0
                let value = min(1, q.sharpness) * q.exposure * (1 + min(1, motion) + 3 * facing)
                if best == nil || value > best!.value { best = (i, q.time, value) }
            }
        }
        return best.map { ($0.segment, $0.time) }
    }

    /// Where the frame lands in the output (0 when its segment was not rendered).
    static func posterOutputTime(
        _ frame: (segment: Int, time: Double), segments: [Segment], outputSegments: [TimeRange]
    ) -> Double {
        guard frame.segment < outputSegments.count, frame.segment < segments.count else { return 0 }
        return outputSegments[frame.segment].start + (frame.time - segments[frame.segment].start)
    }

    /// Copies a file into place (a temporary name, then renamed); false when it cannot.
    static func copyFile(_ source: String, to target: String) -> Bool {
        let temporary = target + ".partial"
        try? FileManager.default.removeItem(atPath: temporary)
        do {
            try FileManager.default.copyItem(atPath: source, toPath: temporary)
            guard rename(temporary, target) == 0 else { throw CocoaError(.fileWriteUnknown) }
            return true
        } catch {
            try? FileManager.default.removeItem(atPath: temporary)
            return false
        }
    }
}
