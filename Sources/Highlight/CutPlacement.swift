import Analysis
import FFmpeg
import MediaEngine

/// The steps of an anchors pass over skipped frames: each from the frame before the skip to the
/// frame after it. Filled as frames arrive (two times per step, nothing else kept).
struct SkippedSteps {
    private(set) var from: [Double] = []
    private(set) var to: [Double] = []
    private var previous: Double?

    mutating func record(time: Double, follows: Bool) {
        if !follows, let previous {
            from.append(previous)
            to.append(time)
        }
        previous = time
    }

    /// The step that ends at `time`, if frames were skipped just before it.
    func step(endingAt time: Double) -> (from: Double, to: Double)? {
        var lo = 0, hi = to.count
        while lo < hi {
            let mid = (lo + hi) / 2
            if to[mid] < time - 1e-4 { lo = mid + 1 } else { hi = mid }
        }
        guard lo < to.count, abs(to[lo] - time) < 1e-4 else { return nil }
        return (from[lo], to[lo])
    }
}

/// Puts each hard cut the anchors pass found on its exact frame. `ShotDetector` saw the I- and
/// P-frames only, so a cut on a skipped B-frame is reported at the next frame it saw; the step's
/// frames are decoded (`AnalysisDecoder.runSteps`) and the cut moves to the frame where the
/// picture changed most, the same distance `ShotDetector` scores a cut by. Gradual transitions
/// keep their place: they are judged by their window, which a few frames do not move.
enum CutPlacement {
    static func place(
        _ boundaries: [ShotBoundary], steps: SkippedSteps, decoder: AnalysisDecoder
    ) throws(MediaError) -> (boundaries: [ShotBoundary], steps: Int, frames: Int) {
        var wanted: [(from: Double, to: Double)] = []
        var owner: [Int] = []
        for (i, b) in boundaries.enumerated() where b.kind == .cut || b.kind == .jump {
            guard let step = steps.step(endingAt: b.time) else { continue }
            wanted.append(step)
            owner.append(i)
        }
        guard !wanted.isEmpty else { return (boundaries, 0, 0) }
        var best = [(time: Double, distance: Float)?](repeating: nil, count: wanted.count)
        var previous = FrameFeatures(), current = FrameFeatures()
        var group = -1
        let summary = try decoder.runSteps(wanted) { frame in
            guard let view = frame.view else { return }
            current.measure(view)
            if frame.group == group, frame.follows {
                let d = ShotDetector.distance(previous, current)
                if best[group].map({ d > $0.distance }) ?? true { best[group] = (frame.time, d) }
            }
            group = frame.group
            previous.assign(from: current)
        }
        var placed = boundaries
        for (k, i) in owner.enumerated() {
            guard let found = best[k] else { continue }
            placed[i].time = found.time
            placed[i].windowStart = found.time
            placed[i].windowEnd = found.time
        }
        placed.sort { $0.time < $1.time }
        return (placed, wanted.count, summary.framesDecoded)
    }
}
