import Analysis

extension Selector {
    /// Seconds a face is taken to be in view before its track's first look and after its last.
    static let faceMargin = 0.25

    /// Where a people moment goes: the window of `length` seconds (shorter when `bounds` are) that
    /// keeps at least half of the chosen `moment` and shows faces the longest (nearest the moment
    /// among equals), cut to the span its faces are in view, though never shorter than the moment;
    /// and that span, which the final fit may grow the segment within. Nil without a face there.
    /// A window that only grew around the moment would spend its seconds on footage after the
    /// face leaves while the same person was in view just before (bench-people's webcam scene:
    /// two tracks a second apart, the moment on the second).
    static func peopleWindow(
        _ moment: ClosedRange<Double>, within bounds: ClosedRange<Double>, faces tracks: [FaceTracks.Track],
        length: Double
    ) -> (segment: ClosedRange<Double>, faces: ClosedRange<Double>)? {
        let spans = tracks.map { ($0.start - faceMargin)...($0.end + faceMargin) }
            .filter { $0.upperBound > bounds.lowerBound && $0.lowerBound < bounds.upperBound }
        guard !spans.isEmpty else { return nil }
        let moment = max(moment.lowerBound, bounds.lowerBound)...min(moment.upperBound, bounds.upperBound)
        let size = min(length, bounds.upperBound - bounds.lowerBound)
        guard size > 0 else { return nil }
        func coverage(_ a: Double, _ b: Double) -> Double {
            // The union of the spans within [a, b] (spans sorted by start).
            var covered = 0.0, reach = a
            for s in spans.sorted(by: { $0.lowerBound < $1.lowerBound }) {
                let lo = max(reach, s.lowerBound), hi = min(b, s.upperBound)
                if hi > lo { covered += hi - lo; reach = hi }
            }
            return covered
        }
        let keep = min(moment.upperBound - moment.lowerBound, size) / 2
        let first = max(bounds.lowerBound, moment.lowerBound + keep - size)
        let last = min(bounds.upperBound - size, moment.upperBound - keep)
        guard last >= first - 1e-9 else { return nil }
        let centre = (moment.lowerBound + moment.upperBound) / 2
        var best: (start: Double, covered: Double, distance: Double)?
        var start = first
        while start <= last + 1e-9 {
            let covered = coverage(start, start + size)
            let distance = abs(start + size / 2 - centre)
            if best == nil || covered > best!.covered + 1e-6
                || (abs(covered - best!.covered) <= 1e-6 && distance < best!.distance)
            {
                best = (start, covered, distance)
            }
            start += 0.05
        }
        guard let best, best.covered > 0 else { return nil }
        let window = best.start...(best.start + size)
        let inView = spans.filter { $0.upperBound > window.lowerBound && $0.lowerBound < window.upperBound }
        let faces =
            max(window.lowerBound, inView.map(\.lowerBound).min()!)...min(
                window.upperBound, inView.map(\.upperBound).max()!)
        // Cut to the faces, but keep the moment's length (grown around the faces, within the window).
        var segment = faces
        let short = (moment.upperBound - moment.lowerBound) - (segment.upperBound - segment.lowerBound)
        if short > 0 {
            let after = min(short, window.upperBound - segment.upperBound)
            let before = min(short - after, segment.lowerBound - window.lowerBound)
            segment = (segment.lowerBound - before)...(segment.upperBound + after)
        }
        return (segment, faces)
    }
}
