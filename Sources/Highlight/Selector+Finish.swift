/// The last steps of a selection: a people moment widened as it is chosen, and the chosen moments
/// put in order, fitted to the target, snapped to cuts and pauses, and described.
extension Selector {
    /// A people moment: longer, within its clean run (`run`), where its faces are in view, and clear
    /// of what is chosen.
    static func widenPeopleMoment(
        _ pick: inout Pick, run: (Double, Double), beside picks: [Pick], analysis: VideoAnalysis,
        settings: SelectionSettings
    ) {
        let start = pick.start, end = pick.end
        var lo = run.0, hi = run.1
        lo = max(lo, picks.filter { $0.end <= start + 1e-6 }.map { $0.end + 0.05 }.max() ?? lo)
        hi = min(hi, picks.filter { $0.start >= end - 1e-6 }.map { $0.start - 0.05 }.min() ?? hi)
        if let window = peopleWindow(
            start...end, within: lo...hi, faces: analysis.faces?.tracks ?? [], length: settings.peopleSeconds)
        {
            (pick.start, pick.end, pick.faces) = (window.segment.lowerBound, window.segment.upperBound, window.faces)
        }
    }

    /// The chosen moments in time order, fitted to the target (faces first), snapped to cuts, grown
    /// or shrunk to speech pauses, fitted again, as segments with their reasons.
    static func finish(_ chosen: [Pick], analysis: VideoAnalysis, settings: SelectionSettings) -> [Segment] {
        func target(_ count: Int) -> Double { settings.targetDuration + Double(max(0, count - 1)) * settings.crossfade }
        var picks = chosen.sorted { $0.start < $1.start }
        clampBounds(&picks)
        fit(&picks, to: target(picks.count), minSegment: settings.minSegment, facesFirst: true)
        snap(&picks, analysis: analysis, settings: settings)
        growToPauses(&picks, to: target(picks.count), analysis: analysis, settings: settings)
        shrinkToPauses(&picks, to: target(picks.count), analysis: analysis, settings: settings)
        fit(
            &picks, to: target(picks.count), minSegment: settings.minSegment, tolerance: settings.tolerance * 0.8,
            pauseTolerance: settings.tolerance, pauseShortfall: max(settings.tolerance, settings.pauseShortfall))
        return picks.map {
            var segment = Segment(
                start: $0.start, end: $0.end, score: $0.scored.score,
                reason: $0.pin != nil ? "pinned moment" : reason($0.scored))
            segment.people = ($0.scored.candidate.people?.presence ?? 0) >= settings.peoplePresence
            return segment
        }
    }
}
