import Analysis
import FFmpeg
import Foundation
import MediaEngine

/// An earlier upload of the same account a new one may be a copy of, as the worker
/// hands it to the isolated child: its fingerprint and, when the new job asks for the same
/// highlight (length, quality, shape, no pins), the segments of the highlight it already made.
public struct ReuploadCandidate: Sendable, Codable, Equatable {
    public var jobId: String
    public var fingerprint: ContentFingerprint
    /// The earlier highlight's segments in the earlier video's seconds; nil when the new job asks
    /// for another highlight (its analysis can still be reused).
    public var copySegments: [Segment]?
    /// The first upload this one was recognised as a copy of, as far as the candidates tell (its
    /// own id when none): candidates of one family show the same footage.
    public var family: String?

    public init(jobId: String, fingerprint: ContentFingerprint, copySegments: [Segment]?, family: String? = nil)
    {
        self.jobId = jobId; self.fingerprint = fingerprint; self.copySegments = copySegments; self.family = family
    }
}

/// A new upload recognised as an earlier one.
public struct ReuploadMatch: Sendable, Codable, Equatable {
    public var jobId: String
    /// Seconds: time t of the new video shows what time t + offset shows in the earlier one.
    public var offset: Double
    public var overlap: Double
    /// Mean Hamming distance of the matched hashes (bits of 64).
    public var distance: Double
    /// The offset was refined to the frame on the dense track.
    public var refined: Bool
    /// The earlier highlight fits in the new video and the same highlight was asked for: it is
    /// returned as this job's (no render, no charge).
    public var resultCopied = false

    public init(jobId: String, offset: Double, overlap: Double, distance: Double, refined: Bool) {
        self.jobId = jobId; self.offset = offset; self.overlap = overlap; self.distance = distance;
        self.refined = refined
    }
}

/// The cheap look at a new upload before its analysis: is it an earlier upload of the account?
public struct Recognition: Sendable, Codable, Equatable {
    /// Not decided here: the keyframes lie too far apart for a cheap fingerprint, so the analysis
    /// (which fingerprints every frame it decodes) judges the candidates itself.
    public var deferred = false
    public var match: ReuploadMatch?
    /// The new video's own measures, for the reused analysis (set with `match`).
    public var target: ReuseTarget?
    /// Frames the look decoded (its keyframes and bursts, and any verification windows).
    public var framesDecoded = 0
    /// Of those, the verification windows' frames (0 when the first look decided).
    public var verificationFrames = 0
    /// 1 when the quick pass over spaced keyframes decided; 2 when a second pass decoded the skipped
    /// groups too, or every group with longer bursts (too few entries to judge).
    public var keyframePasses: Int?
    /// Why the first look matched no candidate, for the log (the best verdict's measures); nil when it matched.
    public var firstLook: String?
    /// The new video's fingerprint from its keyframes (kept for a recognised copy, whose analysis
    /// is not made: its own re-uploads are recognised by it).
    public var fingerprint: ContentFingerprint?
    public init() {}

    /// Records the match, with the new video's own measures for the reused analysis.
    mutating func recognised(_ match: ReuploadMatch, info: MediaInfo, duration: Double) {
        self.match = match
        target = ReuseTarget(
            offset: match.offset, duration: duration, frameRate: info.video.frameRate,
            width: info.video.displayWidth, height: info.video.displayHeight, rotation: info.video.rotation,
            hasAudio: info.mainAudio != nil)
    }
}

/// Recognises re-uploads: the new video's keyframes (and a short burst after each) are decoded at
/// analysis size, fingerprinted and judged against the candidates by `FingerprintMatcher`; where
/// the matcher asks for it (both decodes sparse, their frames too far apart to compare), windows of
/// the new video at the earlier video's frames are decoded and judged again. A match counts only
/// when the new video lies inside the earlier one (so the earlier analysis covers all of it).
///
/// The keyframes are looked at in passes: first only those at least `quickLookSpacing` apart
/// (keyframes cluster at scene cuts, and a group every second or two recognises most copies). Only
/// when that finds no match but is not clearly unrelated footage either is a second pass made: the
/// skipped groups, judged with the kept ones (an alignment was found but not accepted), or every
/// group with longer bursts (too few entries to judge, but they vote for an offset).
///
/// Cost: a keyframe and `burstFrames` frames per group, no audio; keyframes more than
/// `maxKeyframeInterval` apart get a burst of `sparseBurstSeconds`; inputs whose keyframes are more
/// than `maxSparseKeyframeInterval` apart are not looked at (`deferred`): their analysis judges instead.
public enum ReuploadRecognizer {
    public struct Settings: Sendable, Codable, Equatable {
        public var maxKeyframeInterval = 2.5
        public var burstFrames = 3
        /// Keyframes further apart than `maxKeyframeInterval`, up to this: each keyframe's burst
        /// lasts `sparseBurstSeconds` instead (about a tenth of the frames at 10 s), so the look
        /// still sees enough of the video; if it finds nothing, the analysis judges too.
        public var maxSparseKeyframeInterval = 12.0
        public var sparseBurstSeconds = 1.0
        /// The quick pass decodes a keyframe's group only when it lies at least this many seconds
        /// after the last group it decoded (0: every group at once, in one pass).
        public var quickLookSpacing = 1.5
        /// Fingerprint entries a closer look aims at when the quick pass saw too few to judge (a
        /// short video has few groups): every group again, each with a burst of whole 0.2 s steps
        /// (at most `sparseBurstSeconds`); the matcher needs 10 informative pairs.
        public var lookEntries = 16
        /// Seconds the new video may reach past either end of the earlier one and still reuse its analysis.
        public var coverageTolerance = 0.5
        /// Seconds a copied highlight's segments may reach past the new video's ends (then clipped).
        public var copyTolerance = 0.05
        /// Candidates a verification decode is made for, best first.
        public var verifications = 2
        public init() {}
    }

    public static func recognize(
        _ path: String, candidates: [ReuploadCandidate], analysis: AnalysisSettings,
        settings: Settings = Settings(), cancellation: CancellationToken? = nil
    ) throws(MediaError) -> Recognition {
        var result = Recognition()
        guard !candidates.isEmpty else { return result }
        let decoder = try AnalysisDecoder(path: path, options: lookOptions(analysis), cancellation: cancellation)
        let info = decoder.info
        let survey = try decoder.surveyGOPs()
        guard let interval = survey.keyframeInterval, interval <= settings.maxSparseKeyframeInterval else {
            result.deferred = true
            return result
        }
        let rate = info.video.frameRate > 0 ? info.video.frameRate : 30
        let expected = min(max(0, info.duration.isFinite ? info.duration : 0), 86_400)
        func fingerprinter() -> ContentFingerprinter {
            ContentFingerprinter(rotation: info.video.rotation, expectedSeconds: expected)
        }
        let bursts = Bursts(interval: interval, rate: rate, settings: settings)
        let burst = bursts.burst
        var features = FrameFeatures()
        let spacing = settings.quickLookSpacing
        let quickPrint = fingerprinter()
        var quick = ThumbnailLog(expectedFrames: spacing > 0 ? Int(expected / max(spacing, 1)) * (burst + 1) : 0)
        let (summary, decodedKeys, skippedKeys) = try quickPass(
            decoder, survey: survey, spacing: spacing, burst: burst, features: &features
        ) { thumbnail in
            quickPrint.consume(thumbnail)
            if spacing > 0 { quick.append(thumbnail) }
        }
        result.framesDecoded = summary.framesDecoded
        result.keyframePasses = 1
        let decodedEnd = max(summary.lastFrameTime ?? 0, summary.lastPacketTime ?? 0)
        let duration = max(decodedEnd, min(info.duration.isFinite ? info.duration : 0, decodedEnd + 1 / rate))
        var fingerprint = quickPrint.finish(duration: duration)
        var judged = judge(fingerprint, candidates: candidates, duration: duration, settings: settings)

        if judged.match == nil, judged.undersampled, burst < bursts.longest {
            // Too few entries to judge (few groups: a short video), but some vote for an offset:
            // every group again, each burst long enough for `lookEntries` entries in all.
            try cancellation?.check("recognise", path: path)
            let longer = bursts.closer(
                groups: decodedKeys.count + skippedKeys, step: quickPrint.step, entries: settings.lookEntries)
            let closer = fingerprinter()
            result.framesDecoded += try sampledPass(
                decoder, survey: survey, burst: longer, decodesGroup: nil, features: &features
            ) { closer.consume($0) }.framesDecoded
            result.keyframePasses = 2
            fingerprint = closer.finish(duration: duration)
            judged = judge(fingerprint, candidates: candidates, duration: duration, settings: settings)
        } else if judged.match == nil, skippedKeys > 0, judged.inconclusive {
            // The groups the quick pass skipped, fingerprinted with the kept ones in time order.
            try cancellation?.check("recognise", path: path)
            let whole = fingerprinter()
            result.framesDecoded += try sampledPass(
                decoder, survey: survey, burst: burst, decodesGroup: { !decodedKeys.contains($0) }, features: &features
            ) { thumbnail in
                quick.replay(before: thumbnail.time, into: whole)
                whole.consume(thumbnail)
            }.framesDecoded
            quick.replayRest(into: whole)
            result.keyframePasses = 2
            fingerprint = whole.finish(duration: duration)
            judged = judge(fingerprint, candidates: candidates, duration: duration, settings: settings)
        }

        if judged.match == nil {
            result.firstLook = judged.verifications.first.map { "\($0.1)" } ?? "no candidate asked for verification"
            judged.match = try verify(
                judged.verifications, candidates: candidates, decoder: decoder, keyframeInterval: interval,
                duration: duration, fingerprinter: fingerprinter, settings: settings, result: &result,
                cancellation: cancellation, path: path)
        }
        result.fingerprint = fingerprint
        // A sparse or inconclusive look that found nothing is not the last word: the analysis
        // (which fingerprints every frame it decodes) judges as well.
        if judged.match == nil && (bursts.sparse || judged.inconclusive) { result.deferred = true }
        if let match = judged.match { result.recognised(match, info: info, duration: duration) }
        return result
    }

    /// The look's decode: analysis size and limits, video only, the cheapest frames.
    static func lookOptions(_ analysis: AnalysisSettings) -> AnalysisOptions {
        var options = AnalysisOptions()
        options.maxSide = analysis.maxSide
        options.skipNonReferenceFrames = true
        options.skipLoopFilter = true
        options.decodeAudio = false
        options.limits = analysis.limits
        return options
    }

    /// The burst decoded after each keyframe. Sparse keyframes get a longer one (the header's
    /// rate only sizes it, clamped); `longest` is that longer burst, whatever the keyframes.
    struct Bursts {
        let sparse: Bool
        let clampedRate: Double
        let longest: Int
        let burst: Int

        init(interval: Double, rate: Double, settings: Settings) {
            sparse = interval > settings.maxKeyframeInterval
            clampedRate = min(max(rate, 1), 60)
            longest = max(settings.burstFrames, Int((clampedRate * settings.sparseBurstSeconds).rounded()))
            burst = sparse ? longest : settings.burstFrames
        }

        /// A burst long enough for `entries` fingerprint entries over `groups` keyframe groups (at
        /// fingerprint steps of `step` seconds): longer than `burst`, at most `longest`.
        func closer(groups: Int, step: Double, entries: Int) -> Int {
            let steps = (Double(entries) / Double(max(1, groups))).rounded(.up)
            return min(longest, max(burst + 1, Int((steps * step * clampedRate).rounded())))
        }
    }

    /// One sampled pass: each decoded frame's thumbnail measured and handed to `take`.
    static func sampledPass(
        _ decoder: AnalysisDecoder, survey: GOPSurvey, burst: Int, decodesGroup: ((Double) -> Bool)?,
        features: inout FrameFeatures, _ take: (FrameFeatures) -> Void
    ) throws(MediaError) -> AnalysisSummary {
        try decoder.runSampled(
            burstFrames: burst, reorders: survey.reorders, decodesGroup: decodesGroup,
            onFrame: { frame in
                guard let view = frame.view else { return }
                features.measureThumbnail(view)
                take(features)
            }, onGroup: { _ in })
    }

    /// The quick pass: groups at least `spacing` apart, each thumbnail handed to `take` (which
    /// keeps them in case the rest has to be looked at too). Its summary, the groups it decoded
    /// (by keyframe time) and how many it skipped.
    static func quickPass(
        _ decoder: AnalysisDecoder, survey: GOPSurvey, spacing: Double, burst: Int, features: inout FrameFeatures,
        _ take: (FrameFeatures) -> Void
    ) throws(MediaError) -> (AnalysisSummary, Set<Double>, Int) {
        var decodedKeys = Set<Double>()
        var skippedKeys = 0
        var lastKey: Double?
        let summary = try sampledPass(
            decoder, survey: survey, burst: burst,
            decodesGroup: { time in
                if let last = lastKey, time - last < spacing {
                    skippedKeys += 1
                    return false
                }
                lastKey = time
                decodedKeys.insert(time)
                return true
            }, features: &features, take)
        return (summary, decodedKeys, skippedKeys)
    }

    /// Verification decodes, for the candidates that asked for one (at most `settings.verifications`,
    /// best first); none for a family whose dense fingerprint (a full decode, every frame compared)
    /// already said no. The first match found, with its job.
    static func verify(
        _ verdicts: [(Int, FingerprintMatcher.Verdict)], candidates: [ReuploadCandidate], decoder: AnalysisDecoder,
        keyframeInterval: Double, duration: Double, fingerprinter: () -> ContentFingerprinter, settings: Settings,
        result: inout Recognition, cancellation: CancellationToken?, path: String
    ) throws(MediaError) -> ReuploadMatch? {
        let settled = Set(candidates.filter { $0.fingerprint.isDense() }.map { $0.family ?? $0.jobId })
        let asked = verdicts.filter { !settled.contains(candidates[$0.0].family ?? candidates[$0.0].jobId) }
        for (index, verdict) in asked.prefix(settings.verifications) {
            try cancellation?.check("recognise", path: path)
            var verifying = FrameFeatures()
            let windows = TimeRange.joined(
                verdict.verifyAt.map { TimeRange(start: max(0, $0), end: max(0, $0) + verdict.verifySeconds) },
                closerThan: keyframeInterval)
            let verifier = fingerprinter()
            let more = try decoder.runRanges(windows) { frame in
                guard let view = frame.view else { return }
                verifying.measureThumbnail(view)
                verifier.consume(verifying)
            }
            result.framesDecoded += more.framesDecoded
            result.verificationFrames += more.framesDecoded
            let again = judge(
                verifier.finish(duration: duration), candidates: [candidates[index]], duration: duration,
                settings: settings)
            if var match = again.match {
                match.jobId = candidates[index].jobId
                return match
            }
        }
        return nil
    }

    /// The best match among the candidates whose analysis covers the new video, and the verdicts
    /// that asked for a verification decode (best overlap first).
    public static func judge(
        _ fingerprint: ContentFingerprint, candidates: [ReuploadCandidate], duration: Double,
        settings: Settings = Settings()
    ) -> Judgement {
        var best: ReuploadMatch?
        var verify: [(Int, FingerprintMatcher.Verdict)] = []
        var inconclusive = false, undersampled = false
        for (i, candidate) in candidates.enumerated() {
            let verdict = FingerprintMatcher.judge(fingerprint, candidate.fingerprint)
            if verdict.inconclusive { inconclusive = true }
            if verdict.undersampled { undersampled = true }
            guard let m = verdict.match else {
                if !verdict.verifyAt.isEmpty { verify.append((i, verdict)) }
                continue
            }
            // The earlier analysis must cover the new video, or reusing it would leave part unanalysed.
            guard m.offset >= -settings.coverageTolerance,
                m.offset + duration <= candidate.fingerprint.duration + settings.coverageTolerance
            else { continue }
            if best == nil || m.overlap > best!.overlap || (m.overlap == best!.overlap && m.distance < best!.distance) {
                best = ReuploadMatch(
                    jobId: candidate.jobId, offset: m.offset, overlap: m.overlap, distance: m.distance,
                    refined: m.refined)
            }
        }
        verify.sort { $0.1.overlap > $1.1.overlap }
        return Judgement(
            match: best, verifications: verify, inconclusive: best == nil && inconclusive,
            undersampled: best == nil && undersampled)
    }

    /// What `judge` found among the candidates.
    public struct Judgement {
        public var match: ReuploadMatch?
        /// Candidates that asked for a verification decode, best overlap first (index, verdict).
        public var verifications: [(Int, FingerprintMatcher.Verdict)]
        /// No match, but some candidate could still be the same footage (see `Verdict.inconclusive`).
        public var inconclusive: Bool
        /// No match, and the fingerprint was too thin to judge some candidate it may be (see `Verdict.undersampled`).
        public var undersampled: Bool
    }

    /// The earlier highlight's segments in the new video's seconds, when they all lie inside it.
    public static func copiedSegments(
        _ segments: [Segment], offset: Double, duration: Double,
        settings: Settings = Settings()
    ) -> [Segment]? {
        guard !segments.isEmpty else { return nil }
        var out: [Segment] = []
        for s in segments {
            let start = s.start - offset, end = s.end - offset
            guard start >= -settings.copyTolerance, end <= duration + settings.copyTolerance else { return nil }
            // The same moments: their score, reason and people stay; the crop is the new render's.
            var copy = s
            (copy.start, copy.end, copy.crop) = (max(0, start), min(duration, end), nil)
            out.append(copy)
        }
        return out
    }
}
