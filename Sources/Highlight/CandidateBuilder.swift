import Analysis

/// Cuts each shot into candidate segments: the shot's clean footage (no transition, no black,
/// frozen, badly blurred or flash frames) in runs, long runs windowed, each measured.
enum CandidateBuilder {
    static func build(_ analysis: VideoAnalysis, fingerprints: FingerprintCollector, settings: CandidateSettings)
        -> [Candidate]
    {
        var result: [Candidate] = []
        for (index, shot) in analysis.shots.enumerated() {
            let lo = shot.usableStart + (index > 0 ? settings.boundaryMargin : 0)
            let hi = shot.usableEnd - (index < analysis.shots.count - 1 ? settings.boundaryMargin : 0)
            for run in usableRuns(analysis.quality, from: lo, to: hi) where run.1 - run.0 >= settings.minSeconds {
                for window in windows(run.0, run.1, settings) {
                    result.append(
                        Candidate(
                            start: window.0, end: window.1, shot: index,
                            raw: measure(analysis, window.0, window.1),
                            fingerprint: fingerprints.fingerprint(start: window.0, end: window.1),
                            people: people(analysis.faces, window.0, window.1)))
                }
            }
        }
        return result
    }

    /// Stretches of [from, to) without black, frozen or badly blurred frames; such a frame makes
    /// the footage unusable from itself to the next good frame. A flash lasts a frame or two and
    /// only matters when it is all there is, so it does not split footage.
    static func usableRuns(_ quality: [QualityAnalyzer.Sample], from: Double, to: Double) -> [(Double, Double)] {
        guard to > from else { return [] }
        var runs: [(Double, Double)] = []
        var runStart: Double? = from
        for s in quality where s.time >= from && s.time < to {
            if s.isBlack || s.isFrozen || s.isBlurred {
                if let start = runStart, s.time > start { runs.append((start, s.time)) }
                runStart = nil
            } else if runStart == nil {
                runStart = s.time
            }
        }
        if let start = runStart, to > start { runs.append((start, to)) }
        return runs
    }

    static func windows(_ start: Double, _ end: Double, _ settings: CandidateSettings) -> [(Double, Double)] {
        let length = end - start
        if length <= settings.maxSeconds { return [(start, end)] }
        var result: [(Double, Double)] = []
        var t = start
        while t + settings.windowSeconds < end - 1e-6 {
            result.append((t, t + settings.windowSeconds))
            t += settings.hopSeconds
        }
        result.append((max(start, end - settings.windowSeconds), end))
        return result
    }

    /// The faces of [start, end): how often one was seen, and how the largest looked.
    static func people(_ faces: FaceTracks?, _ start: Double, _ end: Double) -> Candidate.People? {
        guard let faces, faces.unavailable == nil else { return nil }
        let presence = faces.presence(from: start, to: end)
        guard presence.looks > 0 else { return Candidate.People(presence: 0, size: 0, frontal: 0, score: 0, most: 0) }
        // The largest face of each look, and how many faces each look saw.
        var largest: [Double: FaceAnalyzer.Detection] = [:]
        var counts: [Double: Int] = [:]
        for box in faces.boxes(from: start, to: end) {
            counts[box.time, default: 0] += 1
            if box.height > largest[box.time]?.height ?? 0 { largest[box.time] = box }
        }
        let n = Float(max(1, largest.count))
        return Candidate.People(
            presence: Float(presence.withFaces) / Float(presence.looks),
            size: largest.values.reduce(0) { $0 + $1.height } / n,
            frontal: largest.values.reduce(0) { $0 + $1.frontal } / n,
            score: largest.values.reduce(0) { $0 + $1.score } / n,
            most: counts.values.max() ?? 0)
    }

    static func measure(_ a: VideoAnalysis, _ start: Double, _ end: Double) -> Candidate.Raw {
        var motion: Float = 0, camera: Float = 0, shake: Float = 0, m = 0
        for s in a.motion where s.time >= start && s.time < end {
            motion += s.subject
            camera += (s.cameraX * s.cameraX + s.cameraY * s.cameraY).squareRoot()
            shake += s.shake
            m += 1
        }
        var sharp: Float = 0, exposure: Float = 0, q = 0
        for s in a.quality where s.time >= start && s.time < end {
            sharp += min(1, s.sharpness)
            exposure += s.exposure
            q += 1
        }
        var loud: Float = 0, onset: Float = 0, n = 0
        let tick = a.audio.tick
        let lo = max(0, Int(start / tick)), hi = min(a.audio.loudness.count, Int((end / tick).rounded(.up)))
        if lo < hi {
            for i in lo..<hi {
                loud += a.audio.loudness[i]
                onset += i < a.audio.onset.count ? a.audio.onset[i] : 0
                n += 1
            }
        }
        func mean(_ x: Float, _ c: Int, _ empty: Float = 0) -> Float { c > 0 ? x / Float(c) : empty }
        return Candidate.Raw(
            motion: mean(motion, m), camera: mean(camera, m), shake: mean(shake, m),
            loudness: mean(loud, n, -100), onsets: mean(onset, n),
            sharpness: mean(sharp, q), exposure: mean(exposure, q))
    }
}
