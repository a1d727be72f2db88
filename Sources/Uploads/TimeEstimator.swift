import MediaVocabulary
import Foundation
import Store

/// Predicts processing time from the input's duration and resolution and the speed of recent jobs.
///
/// Work is measured in "units": seconds of input × megapixels (decode and analysis) plus the target
/// length × output megapixels × `renderWeight` (encode). The rate (seconds per unit) is the ratio of
/// the recent jobs' total processing time to their total units, or `defaultRate` before any job ran.
public struct TimeEstimator: Sendable {
    /// Seconds per unit before any job has been measured (a release build on 2 cores: ~0.065).
    public var defaultRate = 0.07
    /// Encoding a second of output costs about this many seconds of decoding.
    public var renderWeight = 4.0
    /// Jobs the rate is learned from.
    public var history = 20

    public init() {}

    public func units(input: JobInput, targetDuration: Int, quality: HighlightQuality) -> Double {
        let megapixels = Double(input.width * input.height) / 1_000_000
        let capSide: Double = quality == .low ? 480 : quality == .medium ? 720 : 1080
        let shorter = Double(max(1, min(input.width, input.height)))
        let scale = min(1, capSide / shorter)
        let outputMegapixels = megapixels * scale * scale
        return input.duration * megapixels + renderWeight * Double(min(Double(targetDuration), input.duration))
            * outputMegapixels
    }

    /// Seconds per unit learned from `recent` completed jobs.
    public func rate(recent: [Job]) -> Double {
        var seconds = 0.0, work = 0.0
        for job in recent.prefix(history) {
            guard let time = job.processingSeconds else { continue }
            seconds += time
            work += units(input: job.input, targetDuration: job.targetDuration, quality: job.quality)
        }
        return work > 0 && seconds > 0 ? seconds / work : defaultRate
    }

    /// Seconds until a new job would be done: its own processing plus the queue ahead of it shared
    /// among `workers`.
    public func estimate(
        input: JobInput, targetDuration: Int, quality: HighlightQuality, recent: [Job], queue: [Job],
        workers: Int
    ) -> Int {
        let rate = rate(recent: recent)
        let own = rate * units(input: input, targetDuration: targetDuration, quality: quality)
        var ahead = 0.0
        for job in queue {
            var remaining = rate * units(input: job.input, targetDuration: job.targetDuration, quality: job.quality)
            if job.status == .processing { remaining *= Double(100 - job.progress) / 100 }
            ahead += remaining
        }
        return max(1, Int((own + ahead / Double(max(1, workers))).rounded(.up)))
    }
}
