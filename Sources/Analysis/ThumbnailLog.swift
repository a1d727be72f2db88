/// The thumbnails (and times) of frames a pass decoded, kept so a later pass over other frames of
/// the same video can fingerprint the union in time order: the later pass's frames arrive in time
/// order, and before each, `replay(before:into:)` hands the fingerprinter the kept frames that come
/// earlier. One flat buffer for every thumbnail (no allocation per frame once it has grown).
public struct ThumbnailLog {
    private static let size = FrameFeatures.thumbSide * FrameFeatures.thumbSide
    private var times: [Double] = []
    private var thumbs: [Float] = []
    private var next = 0
    private var scratch = FrameFeatures()

    /// `expectedFrames` only reserves room (at most 256 frames, 1 MB: a header's length is not
    /// trusted to size memory); the log grows with the frames actually appended.
    public init(expectedFrames: Int = 0) {
        let frames = min(max(0, expectedFrames), 256)
        times.reserveCapacity(frames)
        thumbs.reserveCapacity(frames * Self.size)
    }

    public var count: Int { times.count }

    /// Keeps the frame's time and thumbnail (frames must come in time order).
    public mutating func append(_ features: FrameFeatures) {
        times.append(features.time)
        thumbs.append(contentsOf: features.thumb)
    }

    /// Feeds `fingerprinter` the kept frames earlier than `time` not fed yet, in order.
    public mutating func replay(before time: Double, into fingerprinter: ContentFingerprinter) {
        while next < times.count, times[next] < time {
            scratch.time = times[next]
            let base = next * Self.size
            scratch.thumb.withUnsafeMutableBufferPointer { target in
                thumbs.withUnsafeBufferPointer { source in
                    for i in 0..<Self.size { target[i] = source[base + i] }
                }
            }
            fingerprinter.consume(scratch)
            next += 1
        }
    }

    /// Feeds the kept frames not fed yet.
    public mutating func replayRest(into fingerprinter: ContentFingerprinter) {
        replay(before: .infinity, into: fingerprinter)
    }
}
