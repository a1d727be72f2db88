import CFFmpeg
import FFmpeg
import Foundation

/// One output slot's picture on its way from the decode stage (a source picture) through the
/// convert stage (an output picture) to the encoder.
package struct RenderPicture {
    package enum Blend {
        /// Encoded as it is.
        case none
        /// Blended with held-back picture `index` of the previous segment's tail, at `weight`.
        case into(index: Int, weight: Double)
        /// Held back (not encoded) as picture `index` of this segment's tail, for a crossfade.
        case hold(index: Int)
    }

    package var frame: Frame
    /// In output frames.
    package var pts: Int64
    package var keyframe: Bool
    /// The reframe's window, in the source picture's stored pixels.
    package var crop: CropRect?
    package var blend: Blend
    /// The frame is one of the convert stage's output pictures (else a source picture's shell).
    package var converted: Bool
}

/// What one stage hands the next, in output order: the encoder sees pictures and sound in the
/// order a single thread would have written them, so the file is the same.
package enum RenderStep {
    case picture(RenderPicture)
    case audio(AudioBlock)
    /// Frames `first..<first+count` of the earlier render, copied to output frame `to`.
    case copy(first: Int, count: Int, to: Int)
    /// A picture held back for a crossfade (counted for the progress only).
    case held
    /// Everything was sent: the encoder finishes the file.
    case end
}

/// A block of output sound (48 kHz stereo, planar float) on its way to the encoder; blocks go back
/// to the decode stage through a queue of free ones.
package final class AudioBlock {
    package static let capacity = 4096
    package let left: UnsafeMutablePointer<Float>
    package let right: UnsafeMutablePointer<Float>
    package let planes: UnsafeMutablePointer<UnsafeMutableRawPointer?>
    package var count = 0

    package init() {
        left = .allocate(capacity: AudioBlock.capacity)
        right = .allocate(capacity: AudioBlock.capacity)
        planes = .allocate(capacity: 2)
        planes[0] = UnsafeMutableRawPointer(left)
        planes[1] = UnsafeMutableRawPointer(right)
    }

    deinit {
        left.deallocate()
        right.deallocate()
        planes.deallocate()
    }
}

/// The queues of one render: the steps between the stages and the free buffers going back.
/// Every buffer is allocated up front; a queue of free ones holds all of its kind, so giving one
/// back never waits.
package final class RenderQueues: @unchecked Sendable {
    /// Source pictures in flight (4K 10-bit: 25 MB each, in the decoder's buffers).
    package static let sourcePictures = 4
    /// Output pictures in flight.
    package static let outputPictures = 3
    package static let audioBlocks = 8

    package let stop = RenderStop()
    package let decoded: RenderQueue<RenderStep>
    package let converted: RenderQueue<RenderStep>
    package let freeSources: RenderQueue<Frame>
    package let freeOutputs: RenderQueue<Frame>
    package let freeAudio: RenderQueue<AudioBlock>

    package init(width: Int, height: Int) throws(MediaError) {
        decoded = RenderQueue(capacity: 2, stop: stop)
        converted = RenderQueue(capacity: 2, stop: stop)
        freeSources = RenderQueue(capacity: RenderQueues.sourcePictures, stop: stop)
        freeOutputs = RenderQueue(capacity: RenderQueues.outputPictures, stop: stop)
        freeAudio = RenderQueue(capacity: RenderQueues.audioBlocks, stop: stop)
        for _ in 0..<RenderQueues.sourcePictures { try freeSources.push(try Frame()) }
        for _ in 0..<RenderQueues.outputPictures {
            try freeOutputs.push(try Frame(width: width, height: height, format: AV_PIX_FMT_YUV420P))
        }
        for _ in 0..<RenderQueues.audioBlocks { try freeAudio.push(AudioBlock()) }
    }

    /// Gives a picture back to the pool it came from once it is encoded or converted.
    package func giveBack(_ picture: RenderPicture) {
        if picture.converted {
            try? freeOutputs.push(picture.frame)
        } else {
            picture.frame.unref()
            try? freeSources.push(picture.frame)
        }
    }

    /// Runs each stage on its own thread (not Swift's cooperative pool: a render blocks for
    /// minutes) and waits for all of them. The first error stops the others and is thrown.
    package func run(_ stages: [(name: String, body: () throws(MediaError) -> Void)]) throws(MediaError) {
        let finished = DispatchSemaphore(value: 0)
        for stage in stages {
            let body = StageBody(done: finished) { [stop] in
                do throws(MediaError) { try stage.body() } catch { stop.fail(error) }
            }
            let thread = Thread { body.run() }
            thread.name = "render-\(stage.name)"
            // Decoders and encoders keep sizeable frames on the stack of the thread that calls them.
            thread.stackSize = 8 << 20
            thread.start()
        }
        for _ in stages { finished.wait() }
        if let error = stop.error { throw error }
    }
}

/// A stage's work, handed to its thread; the objects it uses are that stage's alone. The work is
/// let go before the render is told it is done, so nothing of it outlives the render on this thread.
private final class StageBody: @unchecked Sendable {
    private var work: (() -> Void)?
    private let done: DispatchSemaphore

    package init(done: DispatchSemaphore, _ work: @escaping () -> Void) {
        self.work = work
        self.done = done
    }

    package func run() {
        work?()
        work = nil
        done.signal()
    }
}
