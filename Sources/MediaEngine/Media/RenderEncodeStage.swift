import FFmpeg
import Foundation

/// The render's last stage: encodes the output pictures and sound in the order they come and
/// copies the earlier render's pieces; owns the writer (and the earlier render), and reports the
/// progress.
package final class RenderEncodeStage {
    package let writer: MediaWriter
    private let earlier: EarlierRender?
    private let queues: RenderQueues
    private let cancellation: CancellationToken?
    private let progress: ((Double) -> Void)?
    private let path: String
    /// Output slots, held-back crossfade pictures included, the progress is measured in.
    private let totalSlots: Int
    private var framesDone = 0
    private var lastReported = -1.0

    package init(
        writer: MediaWriter, earlier: EarlierRender?, queues: RenderQueues, plan: EditPlan,
        cancellation: CancellationToken?, progress: ((Double) -> Void)?, path: String
    ) {
        self.writer = writer
        self.earlier = earlier
        self.queues = queues
        self.cancellation = cancellation
        self.progress = progress
        self.path = path
        totalSlots = max(1, plan.totalFrames + plan.crossfadeFrames * (plan.segments.count - 1))
    }

    package func run() throws(MediaError) {
        while true {
            let step = try queues.converted.pop()
            try cancellation?.check("render", path: path)
            switch step {
            case .picture(let picture):
                try writer.write(picture.frame, pts: picture.pts, keyframe: picture.keyframe)
                queues.giveBack(picture)
                framesDone += 1
                report(Double(framesDone) / Double(totalSlots))
            case .audio(let block):
                try writer.writeAudio(planes: block.planes, count: block.count)
                block.count = 0
                try? queues.freeAudio.push(block)
            case .copy(let first, let count, let to):
                guard let earlier else { continue }
                try earlier.copy(first: first, count: count, to: to, writer: writer, path: path)
                framesDone += count
            case .held:
                framesDone += 1
                report(Double(framesDone) / Double(totalSlots))
            case .end:
                try writer.finish()
                return
            }
        }
    }

    package func report(_ fraction: Double) {
        guard let progress else { return }
        let value = min(1, max(0, fraction))
        if value >= 1 || value - lastReported >= 0.005 {
            lastReported = value
            progress(value)
        }
    }
}
