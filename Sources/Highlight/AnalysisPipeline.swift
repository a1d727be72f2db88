import Analysis
import FFmpeg
import MediaEngine

/// Settings of the whole analysis: the decode pass and every analyser. Part of the cache key.
public struct AnalysisSettings: Sendable, Codable, Equatable {
    public var maxSide = 256
    public var skipNonReferenceFrames = true
    /// Skip the deblocking filter in the analysis decode (invisible at analysis size).
    public var skipLoopFilter = true
    /// Analyse at most this many frames per second of a full decode; nil: every frame.
    public var maxFrameRate: Double? = nil
    /// Sample rate of the mono audio the audio analyser hears.
    public var audioSampleRate = 16_000
    /// How the input is decoded: every frame, or keyframes and bursts with refinement around
    /// possible boundaries (chosen per input by default).
    public var plan = DecodePlanSettings()
    /// The sampled plan's screening for possible boundaries.
    public var screen = BoundaryScreen.Settings()
    public var shots = ShotDetector.Settings()
    public var motion = MotionAnalyzer.Settings()
    public var audio = AudioAnalyzer.Settings()
    public var quality = QualityAnalyzer.Settings()
    public var focus = FocusAnalyzer.Settings()
    public var faces = FaceAnalyzer.Settings()
    public var tracking = FaceTracks.Settings()
    public var candidates = CandidateSettings()
    /// Bounds on the decoded media (the plan's duration cap goes in `maxDecodedSeconds`); the
    /// header's duration and frame rate are never trusted for length or work. Part of the cache
    /// key, so an analysis made under looser limits is not served under tighter ones.
    public var limits = DecodeLimits()
    public init() {}

    /// The analysis decode these settings ask for; the decoder's other options keep their own
    /// defaults. Derived here so the decode settings are declared once, above.
    public var decodeOptions: AnalysisOptions {
        var options = AnalysisOptions()
        options.maxSide = maxSide
        options.skipNonReferenceFrames = skipNonReferenceFrames
        options.skipLoopFilter = skipLoopFilter
        options.maxFrameRate = maxFrameRate
        options.audioSampleRate = audioSampleRate
        options.limits = limits
        return options
    }
}

/// How shots are cut into candidate segments.
public struct CandidateSettings: Sendable, Codable, Equatable {
    /// Shots up to this long are one candidate; longer ones are windowed.
    public var maxSeconds = 6.0
    /// Window length and hop for long shots.
    public var windowSeconds = 4.0
    public var hopSeconds = 2.0
    /// Shortest candidate (and shortest segment of a highlight).
    public var minSeconds = 1.5
    /// Kept clear of each shot boundary.
    public var boundaryMargin = 0.1
    public init() {}
}

/// The decode passes feeding every analyser; returns the analysis with its candidates.
///
/// Full plan: one pass, every frame to every analyser. Anchors plan: one pass over the I- and
/// P-frames, every analyser; then the B-frames of each step a cut was found on, to place it
/// exactly (`CutPlacement`), and every frame around each jump cut or near-jump, judged again
/// (`JumpConfirmation`). Sampled plan: one pass over keyframes and
/// the bursts after them (motion, quality, fingerprints and the boundary screen), audio complete;
/// then the screened ranges frame by frame, where `ShotDetector` places the boundaries.
public enum AnalysisPipeline {
    public static func analyze(
        _ path: String, settings: AnalysisSettings = AnalysisSettings(),
        cancellation: CancellationToken? = nil,
        progress: ((Double) -> Void)? = nil
    ) throws(MediaError) -> VideoAnalysis {
        var options = settings.decodeOptions
        options.audioSampleRate = max(4_000, min(settings.audioSampleRate, 96_000))
        let decoder = try AnalysisDecoder(path: path, options: options, cancellation: cancellation)
        let info = decoder.info
        let full = settings.plan.choice == .full
        let survey = full ? GOPSurvey() : try decoder.surveyGOPs()
        let plan = full ? DecodePlan.full : settings.plan.plan(for: info, survey: survey)
        // Progress only moves forward, also when a fallback starts the decode over.
        var reported = -1.0
        let progress = progress.map { report in
            { (share: Double) in
                guard share > reported else { return }
                reported = share
                report(share)
            }
        }
        if let analysis = try run(decoder, plan: plan, survey: survey, settings: settings, progress: progress) {
            return analysis
        }
        // A keyframe group too long for the anchors pass to hold, or P-frames that refer to
        // B-frames: every frame instead.
        let fallback = DecodePlan(
            mode: .full, burstFrames: 0, reason: "B-frames cannot be skipped, or a keyframe group too long to hold")
        guard let analysis = try run(decoder, plan: fallback, survey: survey, settings: settings, progress: progress)
        else { preconditionFailure("the full plan always finishes") }
        return analysis
    }

    /// After the anchors pass: each cut found on a step over skipped frames placed on its exact
    /// frame, and the jump cuts confirmed, by decoding those steps; the ranges decoded counted.
    static func placeAnchorsCuts(
        _ a: Analysers, steps: SkippedSteps, decoder: AnalysisDecoder, settings: AnalysisSettings,
        summary: inout AnalysisSummary
    ) throws(MediaError) -> [ShotBoundary] {
        let found = a.shots.finish()
        let placed = try CutPlacement.place(found, steps: steps, decoder: decoder)
        let jumpCandidates = a.shots.jumpCandidates(
            localRatio: JumpConfirmation.candidateLocalRatio, fineRatio: settings.shots.jumpFineRatio,
            besides: found)
        let confirmed = try JumpConfirmation.confirm(
            placed.boundaries + jumpCandidates, decoder: decoder, settings: settings.shots,
            frameRate: decoder.info.video.frameRate)
        summary.refinedRanges = placed.steps + confirmed.ranges
        summary.refinedFrames = placed.frames + confirmed.frames
        return confirmed.boundaries
    }

    /// One analysis on `plan`, with fresh analysers; nil when the anchors pass gave up on a group.
    static func run(
        _ decoder: AnalysisDecoder, plan: DecodePlan, survey: GOPSurvey, settings: AnalysisSettings,
        progress: ((Double) -> Void)?
    ) throws(MediaError) -> VideoAnalysis? {
        let info = decoder.info
        let a = Analysers(settings: settings, info: info, plan: plan)
        var features = FrameFeatures()
        features.measuresTexture = settings.shots.jumpCuts
        let duration = max(info.duration, 0.001)
        let passShare = plan.mode == .sampled ? 0.8 : plan.mode == .anchors ? 0.95 : 1.0
        var lastReport = -1.0
        // Anchors plan: the steps over skipped frames, where a cut may sit on a frame not seen.
        var steps = SkippedSteps()

        func onFrame(_ frame: borrowing AnalysisFrame) {
            guard let view = frame.view else { return }
            features.measure(view)
            switch plan.mode {
            case .full:
                a.shots.consume(features)
            case .anchors:
                steps.record(time: frame.time, follows: frame.follows)
                a.shots.consume(features)
            case .sampled:
                a.screen.consume(features, follows: frame.follows, group: frame.group)
                a.samples.append(features, group: frame.group)
                if !frame.follows { a.motion.restart() }
            }
            a.quality.consume(features)
            a.focus.consume(features)
            a.faces.consume(view, features: features)
            a.fingerprints.consume(features)
            a.content.consume(features)
            a.motion.consume(view)
            if let progress, frame.time / duration - lastReport >= 0.01 {
                lastReport = frame.time / duration
                progress(min(1, lastReport) * passShare)
            }
        }
        let onAudio: (borrowing AudioChunk) -> Void = { chunk in
            a.audio.consume(chunk.samples, time: chunk.time, rate: chunk.sampleRate)
        }

        var summary: AnalysisSummary
        let boundaries: [ShotBoundary]
        switch plan.mode {
        case .full:
            summary = try decoder.run(onFrame: onFrame, onAudio: onAudio)
            boundaries = a.shots.finish()
        case .anchors:
            // P-frames that lean on B-frames (x265, and any encoder that does so) need the full plan.
            guard try decoder.anchorsDecodeExactly(),
                let pass = try decoder.runAnchors(limits: settings.plan.anchorLimits, onFrame: onFrame, onAudio: onAudio)
            else { return nil }
            summary = pass
            boundaries = try placeAnchorsCuts(a, steps: steps, decoder: decoder, settings: settings, summary: &summary)
        case .sampled:
            let sampled = try runSampledPlan(
                decoder, plan: plan, survey: survey, settings: settings, analysers: a, onFrame: onFrame,
                onAudio: onAudio
            ) { done in
                progress?(passShare + (1 - passShare) * done)
            }
            summary = sampled.summary
            boundaries = sampled.boundaries
        }
        let analysis = assemble(
            summary: summary, boundaries: boundaries, info: info, plan: plan, analysers: a,
            settings: settings.candidates, tracking: settings.tracking)
        progress?(1)
        return analysis
    }

    /// The analysers one decode feeds, each sized for the input's expected frames.
    struct Analysers {
        let shots: ShotDetector
        let motion: MotionAnalyzer
        let quality: QualityAnalyzer
        let focus: FocusAnalyzer
        let faces: FaceAnalyzer
        let fingerprints: FingerprintCollector
        let content: ContentFingerprinter
        let audio: AudioAnalyzer
        let screen: BoundaryScreen
        let samples: FeatureLog

        init(settings: AnalysisSettings, info: MediaInfo, plan: DecodePlan) {
            let expected = Self.expectedFrames(info: info, plan: plan)
            shots = ShotDetector(
                settings: settings.shots, expectedFrames: plan.mode == .full ? expected : 0,
                maxFrameRate: max(30, info.video.frameRate))
            motion = MotionAnalyzer(settings: settings.motion, expectedFrames: expected)
            quality = QualityAnalyzer(settings: settings.quality, expectedFrames: expected)
            focus = FocusAnalyzer(settings: settings.focus, expectedFrames: expected)
            faces = FaceAnalyzer(settings: settings.faces, rotation: info.video.rotation)
            fingerprints = FingerprintCollector(expectedFrames: expected)
            content = ContentFingerprinter(
                rotation: info.video.rotation,
                expectedSeconds: min(max(0, info.duration.isFinite ? info.duration : 0), 86_400))
            audio = AudioAnalyzer(settings: settings.audio)
            screen = BoundaryScreen(settings: settings.screen)
            samples = FeatureLog(expected: plan.mode == .sampled ? expected : 0)
        }

        /// A hint only (header values): the analysers clamp what they reserve and grow as frames arrive.
        static func expectedFrames(info: MediaInfo, plan: DecodePlan) -> Int {
            let claimed = max(0, info.duration) * max(1, info.video.frameRate)
            var expected =
                claimed.isFinite && claimed < Double(Reservation.maxFrames)
                ? Int(claimed) + 16 : Reservation.maxFrames
            if plan.mode == .sampled {
                expected = min(
                    expected, Int(max(0, info.duration).clamped(to: 0...86_400)) * (plan.burstFrames + 1) + 16)
            }
            return expected
        }
    }

    /// The sampled plan's two steps: keyframes and their bursts (screened for possible boundaries),
    /// then the screened ranges refined frame by frame. `progress` gets the refinement's share done.
    static func runSampledPlan(
        _ decoder: AnalysisDecoder, plan: DecodePlan, survey: GOPSurvey, settings: AnalysisSettings,
        analysers a: Analysers, onFrame: (borrowing AnalysisFrame) -> Void,
        onAudio: (borrowing AudioChunk) -> Void, progress: (Double) -> Void
    ) throws(MediaError) -> (summary: AnalysisSummary, boundaries: [ShotBoundary]) {
        let info = decoder.info
        var summary = try decoder.runSampled(
            burstFrames: plan.burstFrames, reorders: survey.reorders, onFrame: onFrame, onAudio: onAudio
        ) { group in
            a.screen.addGroup(
                BoundaryScreen.GOPInfo(
                    keyTime: group.keyTime, largestPacketRatio: group.largestPacketRatio,
                    complete: group.complete))
        }
        let rate = info.video.frameRate > 0 ? info.video.frameRate : 30
        let ranges = a.screen.finish(
            end: max(summary.lastPacketTime ?? 0, summary.lastFrameTime ?? 0) + 0.001, frameRate: rate)
        let refined = try refine(
            decoder, ranges: ranges, samples: a.samples, settings: settings.shots, screen: settings.screen,
            frameRate: max(30, info.video.frameRate), progress: progress)
        summary.refinedRanges = ranges.count
        summary.refinedSeconds = ranges.reduce(0) { $0 + ($1.end - $1.start) }
        summary.refinedFrames = refined.frames
        if let last = refined.lastFrameTime { summary.lastFrameTime = max(summary.lastFrameTime ?? last, last) }
        return (summary, refined.boundaries)
    }

    /// The analysis from what the decode found: its length, the shots between the boundaries, every
    /// analyser's result and the candidates.
    static func assemble(
        summary: AnalysisSummary, boundaries: [ShotBoundary], info: MediaInfo, plan: DecodePlan,
        analysers a: Analysers, settings: CandidateSettings, tracking: FaceTracks.Settings
    ) -> VideoAnalysis {
        let qualitySamples = a.quality.finish()
        let motionSamples = a.motion.finish()
        let audioResult = a.audio.finish()
        // The decoded length: the header's duration only stretches it by up to a frame or so (the
        // last frame's own duration), never by what a lying header claims.
        let decodedEnd = summary.lastFrameTime ?? 0
        let end = max(
            decodedEnd, min(info.duration.isFinite ? info.duration : 0, decodedEnd + (plan.mode == .full ? 1 : 0.1)))
        var shotList: [VideoAnalysis.Shot] = []
        var start = 0.0, usableStart = 0.0
        for b in boundaries {
            shotList.append(
                VideoAnalysis.Shot(start: start, end: b.time, usableStart: usableStart, usableEnd: b.windowStart))
            start = b.time
            usableStart = b.windowEnd
        }
        shotList.append(VideoAnalysis.Shot(start: start, end: end, usableStart: usableStart, usableEnd: end))

        var analysis = VideoAnalysis(
            duration: end, frameRate: info.video.frameRate, width: info.video.displayWidth,
            height: info.video.displayHeight,
            rotation: info.video.rotation, hasAudio: info.mainAudio != nil, boundaries: boundaries, shots: shotList,
            motion: motionSamples, quality: qualitySamples, focus: a.focus.finish(), audio: audioResult, candidates: [],
            summary: summary)
        analysis.fingerprint = a.content.finish(duration: end)
        analysis.faces = a.faces.finish(boundaries: boundaries.map(\.time), settings: tracking)
        analysis.candidates = CandidateBuilder.build(
            analysis, fingerprints: a.fingerprints, settings: settings)
        return analysis
    }

    /// Decodes each screened range frame by frame through its own `ShotDetector`; keeps the
    /// boundaries each finds away from its ends (where it lacks the frames to judge), in order,
    /// the stronger of two closer than `minShotSeconds`.
    ///
    /// Two savings, both on a range that ends at (the burst of) the next sampled keyframe:
    /// - the decode stops before that keyframe when its sampled burst reaches (to within a frame)
    ///   the range's end: the burst's frames, already measured, are replayed from `samples` (a
    ///   keyframe is the costliest frame to decode);
    /// - a range that holds one keyframe group stops as soon as `screen.settleFrames` frames in a
    ///   row are steady (each changed less than `gradualFrameThreshold` from the one before, so
    ///   no dissolve is still under way) and look like that next keyframe (distance below
    ///   `screen.gapThreshold`, the screen's own "nothing happened across this gap"): whatever the
    ///   range was flagged for is behind them, and the rest of the group is a gap the screen would
    ///   not have flagged.
    static func refine(
        _ decoder: AnalysisDecoder, ranges: [(start: Double, end: Double)], samples: FeatureLog,
        settings: ShotDetector.Settings, screen: BoundaryScreen.Settings, frameRate: Double,
        progress: (Double) -> Void
    ) throws(MediaError)
        -> (boundaries: [ShotBoundary], frames: Int, lastFrameTime: Double?)
    {
        let frame = 1 / max(1, frameRate)
        // Where each range's decode stops, the samples replayed after it, and the keyframe sample
        // its frames may settle on.
        var decodeRanges: [TimeRange] = []
        var replays: [Range<Int>] = []
        var settleOn: [Int?] = []
        for range in ranges {
            let stop = decodeStop(range, samples: samples, screen: screen, frame: frame)
            decodeRanges.append(stop.decode)
            replays.append(stop.replay)
            settleOn.append(stop.settleOn)
        }
        var found: [ShotBoundary] = []
        var detector: ShotDetector?
        var current = -1
        var features = FrameFeatures()
        features.measuresTexture = settings.jumpCuts
        var target = FrameFeatures()
        var settled = 0
        var settledAt: Double?
        let settleFrames = max(settings.burstFrames + 1, screen.settleFrames)
        let tail = Double(max(1, settings.burstFrames) + 1) * frame
        func close() {
            guard let d = detector, current >= 0 else { return }
            let range = ranges[current]
            let isLast = current == ranges.count - 1
            if let settledAt {
                // Stopped early: a boundary is judged once `burstFrames` frames after it were seen.
                let seen = settledAt - Double(settings.burstFrames) * frame + 1e-4
                found += d.finish().filter { $0.time > range.start + 1e-6 && $0.time <= seen }
            } else {
                for i in replays[current] {
                    samples.load(i, into: &features)
                    d.consume(features)
                }
                found += d.finish().filter { $0.time > range.start + 1e-6 && ($0.time < range.end - tail || isLast) }
            }
            detector = nil
        }
        let summary = try decoder.runRanges(decodeRanges, isFinished: { $0 == current && settledAt != nil }) { frame in
            if frame.group != current {
                close()
                current = frame.group
                detector = ShotDetector(settings: settings, maxFrameRate: frameRate)
                settled = 0
                settledAt = nil
                if let t = settleOn[current] { samples.load(t, into: &target) }
                progress(Double(current) / Double(max(1, ranges.count)))
            }
            guard let view = frame.view else { return }
            features.measure(view)
            detector?.consume(features)
            if settleOn[current] != nil, let d = detector {
                // Steady (no gradual transition still running, which the detector judges only
                // once it ends) and like the keyframe that ends the range.
                let steady = (d.scores.last ?? 1) <= settings.gradualFrameThreshold
                let near =
                    steady && ShotDetector.distance(features, target, limit: screen.gapThreshold) < screen.gapThreshold
                settled = near ? settled + 1 : 0
                if settled >= settleFrames { settledAt = frame.time }
            }
        }
        close()
        return (
            ShotDetector.keepStrongest(found, minShotSeconds: settings.minShotSeconds), summary.framesDecoded,
            summary.lastFrameTime
        )
    }

    /// Where a range's decode stops: before the last keyframe inside it whose sampled burst reaches
    /// the range's end (then that burst is replayed from `samples`), else at the range's end; and
    /// the keyframe sample its frames may settle on.
    static func decodeStop(
        _ range: (start: Double, end: Double), samples: FeatureLog, screen: BoundaryScreen.Settings, frame: Double
    ) -> (decode: TimeRange, replay: Range<Int>, settleOn: Int?) {
        var stop = range.end
        var replay = 0..<0
        var target: Int?
        // The last keyframe inside the range whose sampled burst reaches the range's end.
        if let inside = samples.times.lastIndex(where: { $0 > range.start + 1e-6 && $0 <= range.end }) {
            let group = samples.groups[inside]
            var first = inside, last = inside
            while first > 0 && samples.groups[first - 1] == group { first -= 1 }
            while last + 1 < samples.count && samples.groups[last + 1] == group { last += 1 }
            if samples.times[first] > range.start + 1e-6, samples.times[last] >= range.end - 1.5 * frame {
                stop = samples.times[first] - 1e-4
                replay = first..<(last + 1)
                // One group before it in the range (no other keyframe between the range's start
                // and this one): the frames may settle on this keyframe.
                var i = first - 1, otherKeyframe = false
                while i > 0, samples.times[i] > range.start + 1e-6, !otherKeyframe {
                    otherKeyframe = samples.groups[i] != samples.groups[i - 1]
                    i -= 1
                }
                if screen.settleFrames > 0, !otherKeyframe { target = first }
            }
        }
        return (TimeRange(start: range.start, end: max(range.start, stop)), replay, target)
    }
}

private extension Double {
    func clamped(to range: ClosedRange<Double>) -> Double {
        isFinite ? Swift.min(Swift.max(self, range.lowerBound), range.upperBound) : range.lowerBound
    }
}
