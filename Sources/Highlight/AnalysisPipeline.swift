import Analysis
import MediaEngine

/// Settings of the whole analysis: the decode pass and every analyser. Part of the cache key.
public struct AnalysisSettings: Sendable, Codable, Equatable {
    public var maxSide = 256
    public var skipNonReferenceFrames = true
    public var shots = ShotDetector.Settings()
    public var motion = MotionAnalyzer.Settings()
    public var audio = AudioAnalyzer.Settings()
    public var quality = QualityAnalyzer.Settings()
    public var candidates = CandidateSettings()
    /// Bounds on the decoded media (the plan's duration cap goes in `maxDecodedSeconds`); the
    /// header's duration and frame rate are never trusted for length or work. Part of the cache
    /// key, so an analysis made under looser limits is not served under tighter ones.
    public var limits = DecodeLimits()
    public init() {}
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

/// One decode pass feeding every analyser; returns the analysis with its candidates.
public enum AnalysisPipeline {
    public static func analyze(_ path: String, settings: AnalysisSettings = AnalysisSettings(),
                               cancellation: CancellationToken? = nil,
                               progress: ((Double) -> Void)? = nil) throws(MediaError) -> VideoAnalysis {
        var options = AnalysisOptions()
        options.maxSide = settings.maxSide
        options.skipNonReferenceFrames = settings.skipNonReferenceFrames
        options.audioSampleRate = 16_000
        options.limits = settings.limits
        let decoder = try AnalysisDecoder(path: path, options: options, cancellation: cancellation)
        let info = decoder.info
        // A hint only (header values): the analysers clamp what they reserve and grow as frames arrive.
        let claimed = max(0, info.duration) * max(1, info.video.frameRate)
        let expected = claimed.isFinite && claimed < Double(Reservation.maxFrames) ? Int(claimed) + 16 : Reservation.maxFrames
        let shots = ShotDetector(settings: settings.shots, expectedFrames: expected, maxFrameRate: max(30, info.video.frameRate))
        let motion = MotionAnalyzer(settings: settings.motion, expectedFrames: expected)
        let quality = QualityAnalyzer(settings: settings.quality, expectedFrames: expected)
        let fingerprints = FingerprintCollector(expectedFrames: expected)
        let audio = AudioAnalyzer(settings: settings.audio)
        var features = FrameFeatures()
        let duration = max(info.duration, 0.001)
        var lastReport = -1.0

        let summary = try decoder.run(onFrame: { frame in
            guard let y = frame.luma.baseAddress, let u = frame.cb.baseAddress, let v = frame.cr.baseAddress else { return }
            let view = FrameView(time: frame.time, width: frame.width, height: frame.height, luma: y, lumaStride: frame.lumaStride,
                                 chromaWidth: frame.chromaWidth, chromaHeight: frame.chromaHeight, cb: u, cr: v,
                                 chromaStride: frame.chromaStride)
            features.measure(view)
            shots.consume(features)
            quality.consume(features)
            fingerprints.consume(features)
            motion.consume(view)
            if let progress, frame.time / duration - lastReport >= 0.01 {
                lastReport = frame.time / duration
                progress(min(1, lastReport))
            }
        }, onAudio: { chunk in
            audio.consume(chunk.samples, time: chunk.time, rate: chunk.sampleRate)
        })

        let boundaries = shots.finish()
        let qualitySamples = quality.finish()
        let motionSamples = motion.finish()
        let audioResult = audio.finish()
        // The decoded length: the header's duration only stretches it by up to a frame or so (the
        // last frame's own duration), never by what a lying header claims.
        let decodedEnd = summary.lastFrameTime ?? 0
        let end = max(decodedEnd, min(info.duration.isFinite ? info.duration : 0, decodedEnd + 1))
        var shotList: [VideoAnalysis.Shot] = []
        var start = 0.0, usableStart = 0.0
        for b in boundaries {
            shotList.append(VideoAnalysis.Shot(start: start, end: b.time, usableStart: usableStart, usableEnd: b.windowStart))
            start = b.time
            usableStart = b.windowEnd
        }
        shotList.append(VideoAnalysis.Shot(start: start, end: end, usableStart: usableStart, usableEnd: end))

        var analysis = VideoAnalysis(
            duration: end, frameRate: info.video.frameRate, width: info.video.displayWidth, height: info.video.displayHeight,
            hasAudio: info.mainAudio != nil, boundaries: boundaries, shots: shotList, motion: motionSamples,
            quality: qualitySamples, audio: audioResult, candidates: [], summary: summary)
        analysis.candidates = CandidateBuilder.build(analysis, fingerprints: fingerprints, settings: settings.candidates)
        progress?(1)
        return analysis
    }
}
