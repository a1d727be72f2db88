import Analysis

/// Cuts of people moments at pauses in speech: segments whose ends sit at pauses grow or shrink
/// from pause to pause to meet the target, so the last fit has nothing to take from a sentence.
extension Selector {
    /// When the highlight is short of its target and the segments that could grow end at pauses in
    /// speech, grows them from pause to pause (best first, ends before starts): the last fit then
    /// has nothing to take from a sentence.
    static func growToPauses(
        _ picks: inout [Pick], to target: Double, analysis: VideoAnalysis, settings: SelectionSettings
    ) {
        let tolerance = settings.tolerance * 0.8
        var difference = target - picks.reduce(0) { $0 + $1.duration }
        guard difference > tolerance, analysis.hasAudio else { return }
        for i in picks.indices.sorted(by: { picks[$0].scored.score > picks[$1].scored.score })
        where picks[i].atPause && difference > tolerance {
            clampBounds(&picks)
            let end = picks[i].end, start = picks[i].start
            if let later = speechPauses(analysis.audio, near: end + difference, settings: settings)
                .filter({ $0 > end && $0 <= picks[i].highest + 1e-6 && $0 - end <= difference + tolerance })
                .max()
            {
                picks[i].end = later
                difference -= later - end
            }
            guard difference > tolerance else { break }
            if let earlier = speechPauses(analysis.audio, near: start - difference, settings: settings)
                .filter({ $0 < start && $0 >= picks[i].lowest - 1e-6 && start - $0 <= difference + tolerance })
                .min()
            {
                picks[i].start = earlier
                difference -= start - earlier
            }
        }
    }

    /// When the highlight is longer than its target and segments end at pauses in speech, brings
    /// their ends (then starts) back to an earlier (later) pause: lowest score first, the smallest
    /// step that covers what is left, else the largest within it. The highlight may end up to
    /// `pauseShortfall` under the target rather than cut a sentence.
    static func shrinkToPauses(
        _ picks: inout [Pick], to target: Double, analysis: VideoAnalysis, settings: SelectionSettings
    ) {
        let tolerance = settings.tolerance
        var excess = picks.reduce(0) { $0 + $1.duration } - target
        guard excess > tolerance, analysis.hasAudio else { return }
        // Pauses as far back as the step may go (not only within the snap radius).
        var reach = settings
        reach.speechSnapRadius = excess + settings.pauseShortfall
        for i in picks.indices.sorted(by: { picks[$0].scored.score < picks[$1].scored.score })
        where picks[i].atPause && picks[i].pin == nil && excess > tolerance {
            for isStart in [false, true] where excess > tolerance {
                let t = isStart ? picks[i].start : picks[i].end
                let steps = speechPauses(analysis.audio, near: t, settings: reach).compactMap { p -> Double? in
                    let step = isStart ? p - t : t - p
                    let rest = isStart ? picks[i].end - p : p - picks[i].start
                    return step > 0.05 && rest >= settings.minSegment && step <= excess + settings.pauseShortfall ? step : nil
                }
                guard let step = steps.filter({ $0 >= excess - tolerance }).min() ?? steps.max() else { continue }
                if isStart { picks[i].start += step } else { picks[i].end -= step }
                excess -= step
            }
        }
    }

    /// The middles of the pauses in speech within `speechSnapRadius` of `time`, nearest first.
    public static func speechPauses(_ audio: AudioAnalyzer.Result, near time: Double, settings: SelectionSettings)
        -> [Double]
    {
        let loud = audio.fineLoudness, tick = audio.fineTick
        guard tick > 0, !loud.isEmpty else { return [] }
        let around = max(0, Int((time - 1) / tick))..<min(loud.count, Int((time + 1) / tick) + 1)
        guard around.count > 4 else { return [] }
        let speech = loud[around].sorted()[around.count / 2]
        let level = speech - settings.pauseDepth
        let lo = max(0, Int((time - settings.speechSnapRadius) / tick))
        let hi = min(loud.count, Int((time + settings.speechSnapRadius) / tick) + 1)
        let need = max(1, Int((settings.pauseSeconds / tick).rounded()))
        var pauses: [Double] = []
        var run = 0
        for i in lo..<hi {
            run = loud[i] <= level ? run + 1 : 0
            // The middle of each run long enough (once, when it reaches the length).
            if run == need { pauses.append((Double(i) + 1 - Double(need) / 2) * tick) }
        }
        return pauses.sorted { abs($0 - time) < abs($1 - time) }
    }

}
