import FFmpeg
import Foundation

/// Lays each segment's audio onto the output timeline: exactly `segment.samples` samples per
/// segment (so sound never drifts from picture), a short fade at every hard join (no clicks), an
/// equal-power crossfade where segments overlap. Hands the sound on in blocks taken from a pool of
/// free ones; all buffers are allocated once.
package final class AudioJoiner {
    /// Where the blocks come from and go to.
    package struct Sink {
        let free: () throws(MediaError) -> AudioBlock
        let send: (AudioBlock) throws(MediaError) -> Void
    }

    private let sink: Sink
    private let fadeSamples: Int
    private var out: AudioBlock?
    private var holdLeft: UnsafeMutablePointer<Float>
    private var holdRight: UnsafeMutablePointer<Float>
    private let holdCapacity: Int
    private var segment: EditPlan.Segment?
    /// Samples of the current segment already laid down.
    private(set) var position = 0

    package convenience init(sink: Sink, plan: EditPlan, fade: Double) {
        self.init(
            sink: sink, sampleRate: plan.sampleRate, fade: fade,
            overlapSamples: plan.segments.map { max($0.overlapInSamples, $0.overlapOutSamples) }.max() ?? 1)
    }

    /// `overlapSamples`: the longest crossfade it lays (0: hard joins only).
    package init(sink: Sink, sampleRate: Int, fade: Double, overlapSamples: Int) {
        self.sink = sink
        fadeSamples = max(1, Int(fade * Double(sampleRate)))
        holdCapacity = max(1, overlapSamples)
        holdLeft = .allocate(capacity: holdCapacity)
        holdRight = .allocate(capacity: holdCapacity)
        holdLeft.initialize(repeating: 0, count: holdCapacity)
        holdRight.initialize(repeating: 0, count: holdCapacity)
    }

    deinit {
        holdLeft.deallocate(); holdRight.deallocate()
    }

    package func begin(_ segment: EditPlan.Segment) {
        self.segment = segment
        position = 0
    }

    package var remaining: Int { (segment?.samples ?? 0) - position }

    /// Appends up to `remaining` samples of the current segment; returns how many were taken.
    @discardableResult
    package func push(left: UnsafePointer<Float>, right: UnsafePointer<Float>, count: Int) throws(MediaError) -> Int {
        let n = min(count, remaining)
        for i in 0..<n { try put(left[i], right[i]) }
        return n
    }

    package func pushSilence(_ count: Int) throws(MediaError) {
        for _ in 0..<min(count, remaining) { try put(0, 0) }
    }

    private func put(_ l: Float, _ r: Float) throws(MediaError) {
        guard let s = segment else { return }
        let j = position
        position += 1
        var gain: Float = 1
        if s.overlapInSamples == 0, j < fadeSamples { gain *= (Float(j) + 0.5) / Float(fadeSamples) }
        if s.overlapOutSamples == 0, j >= s.samples - fadeSamples {
            gain *= (Float(s.samples - j) - 0.5) / Float(fadeSamples)
        }
        var left = l * gain, right = r * gain
        if j < s.overlapInSamples {
            let w = (Double(j) + 0.5) / Double(s.overlapInSamples) * Double.pi / 2
            let fadeIn = Float(sin(w)), fadeOut = Float(cos(w))
            left = left * fadeIn + holdLeft[j] * fadeOut
            right = right * fadeIn + holdRight[j] * fadeOut
        }
        let tailStart = s.samples - s.overlapOutSamples
        if j >= tailStart {
            holdLeft[j - tailStart] = left
            holdRight[j - tailStart] = right
            return
        }
        let block: AudioBlock
        if let out { block = out } else { block = try sink.free(); block.count = 0; out = block }
        block.left[block.count] = left
        block.right[block.count] = right
        block.count += 1
        if block.count == AudioBlock.capacity { try flush() }
    }

    package func flush() throws(MediaError) {
        guard let block = out, block.count > 0 else { return }
        out = nil
        try sink.send(block)
    }
}
