import AnalysisDecode
import ArgumentParser
import FFmpeg
import Foundation
import MediaEngine
import MediaSynth
import MomentsConfig

/// Runs the analysis decode alone and reports what it saw (used by the benchmark).
struct DecodeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "decode", abstract: "Run the analysis decode pass and print its summary.")

    @Argument(help: "The video.") var file: String
    @Option(help: "Longest side of the analysis pictures (default from Config/).") var maxSide: Int?
    @Option(help: "Analyse at most this many frames per second.") var fps: Double?
    @Flag(help: "Skip non-reference frames (the default in Config/).") var skipNonref = false
    @Flag(help: "Decode every frame, reference or not.") var allFrames = false
    @Flag(help: "Keep the deblocking filter on.") var loopFilter = false
    @Flag(help: "Do not decode audio.") var noAudio = false
    @Option(help: "Decoder threads (0: sized to the machine).") var threads = 0

    func run() async throws {
        let config = try await CLIConfig.load()
        try runReportingErrors {
            var options = config.mediaDefaults().template.analysis.decodeOptions
            if let maxSide { options.maxSide = maxSide }
            if let fps { options.maxFrameRate = fps }
            if skipNonref { options.skipNonReferenceFrames = true }
            if allFrames { options.skipNonReferenceFrames = false }
            if loopFilter { options.skipLoopFilter = false }
            options.threads = threads
            options.decodeAudio = !noAudio
            let token = CancellationToken()
            let interrupts = InterruptHandler(token)
            let decoder = try AnalysisDecoder(path: file, options: options, cancellation: token)
            let bar = ProgressBar("decoding")
            let duration = max(decoder.info.duration, 0.001)
            var lumaSum = 0
            let summary = try decoder.run(onFrame: { frame in
                lumaSum &+= Int(frame.luma[frame.luma.count / 2])
                bar.update(frame.time / duration)
            })
            bar.finish()
            withExtendedLifetime(interrupts) {}
            print(try JSON.encode(summary))
        }
    }
}

struct SampleCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "sample",
        abstract: "Write a synthetic sample video (shots, flashes, beeps) for trying Moments out.")

    @Option(name: .shortAndLong, help: "Output MP4 path.") var output: String
    @Option(help: "Seconds.") var duration = 20.0
    @Option(help: "Width (a multiple of 16).") var width = 640
    @Option(help: "Height.") var height = 360
    @Option(help: "Clockwise rotation to write in the display matrix (0, 90, 180, 270).") var rotation = 0
    @Flag(
        help:
            "The planted-highlight layout instead (60 s of lively, dull, black, frozen and blurred parts; --duration is ignored), as scripts/bench-analysis scores it."
    )
    var planted = false

    func run() throws {
        try runReportingErrors {
            var spec =
                planted
                ? SynthSpec.planted(width: width, height: height)
                : SynthSpec.sample(duration: duration, width: width, height: height)
            spec.preset = "veryfast"
            spec.rotation = rotation
            try Synth.write(spec, to: output)
            print(output)
        }
    }
}
