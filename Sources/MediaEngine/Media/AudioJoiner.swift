import Foundation

/// Lays each segment's audio onto the output timeline: exactly `segment.samples` samples per
/// segment (so sound never drifts from picture), a short fade at every hard join (no clicks), an
/// equal-power crossfade where segments overlap. Writes to the MediaWriter in blocks; all buffers
/// are allocated once.
final class AudioJoiner {
    private let writer: MediaWriter
    private let fadeSamples: Int
    private let block = 4096
    private let outLeft: UnsafeMutablePointer<Float>
    private let outRight: UnsafeMutablePointer<Float>
    private let planes: UnsafeMutablePointer<UnsafeMutableRawPointer?>
    private var outCount = 0
    private var holdLeft: UnsafeMutablePointer<Float>
    private var holdRight: UnsafeMutablePointer<Float>
    private let holdCapacity: Int
    private var segment: EditPlan.Segment?
    /// Samples of the current segment already laid down.
    private(set) var position = 0

    init(writer: MediaWriter, plan: EditPlan, fade: Double) {
        self.writer = writer
        fadeSamples = max(1, Int(fade * Double(plan.sampleRate)))
        outLeft = .allocate(capacity: block)
        outRight = .allocate(capacity: block)
        planes = .allocate(capacity: 2)
        planes[0] = UnsafeMutableRawPointer(outLeft)
        planes[1] = UnsafeMutableRawPointer(outRight)
        holdCapacity = max(1, plan.segments.map { max($0.overlapInSamples, $0.overlapOutSamples) }.max() ?? 1)
        holdLeft = .allocate(capacity: holdCapacity)
        holdRight = .allocate(capacity: holdCapacity)
        holdLeft.initialize(repeating: 0, count: holdCapacity)
        holdRight.initialize(repeating: 0, count: holdCapacity)
    }

    deinit {
        outLeft.deallocate(); outRight.deallocate(); planes.deallocate()
        holdLeft.deallocate(); holdRight.deallocate()
    }

    func begin(_ segment: EditPlan.Segment) {
        self.segment = segment
        position = 0
    }

    var remaining: Int { (segment?.samples ?? 0) - position }

    /// Appends up to `remaining` samples of the current segment; returns how many were taken.
    @discardableResult
    func push(left: UnsafePointer<Float>, right: UnsafePointer<Float>, count: Int) throws(MediaError) -> Int {
        let n = min(count, remaining)
        for i in 0..<n { try put(left[i], right[i]) }
        return n
    }

    func pushSilence(_ count: Int) throws(MediaError) {
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
        outLeft[outCount] = left
        outRight[outCount] = right
        outCount += 1
        if outCount == block { try flush() }
    }

    func flush() throws(MediaError) {
        guard outCount > 0 else { return }
        try writer.writeAudio(planes: planes, count: outCount)
        outCount = 0
    }
}
