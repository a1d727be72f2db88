import AnalysisDecode
import Foundation
import MediaEngine

/// What one fuzz input goes through: the safe open and probe of bytes in memory, then a bounded
/// analysis decode (a few frames of tiny pictures). Media errors are the expected outcome of
/// mutated input; only a crash, a hang or a runaway allocation is a finding.
enum Harness {
    static func run(_ bytes: [UInt8]) {
        do {
            _ = try Probe.probe(bytes: bytes, name: "fuzz")
        } catch {
            return
        }
        var options = AnalysisOptions()
        options.maxSide = 32
        options.threads = 1
        options.limits = DecodeLimits(
            maxDecodedSeconds: 600, maxFramesPerSecond: 240, maxTotalFrames: 24, maxTimestampJump: 60)
        do {
            let decoder = try AnalysisDecoder(bytes: bytes, name: "fuzz", options: options)
            var sum = 0
            _ = try decoder.run(
                onFrame: { frame in
                    sum &+= Int(frame.luma.first ?? 0)  // touch the picture
                },
                onAudio: { chunk in
                    sum &+= chunk.samples.count
                })
        } catch {
            return
        }
    }
}
