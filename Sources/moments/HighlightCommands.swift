import Analysis
import ArgumentParser
import FFmpeg
import Foundation
import Highlight
import MediaEngine
import MomentsConfig

struct AnalyzeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "analyze",
        abstract: "Analyse a video: shots, motion, audio, quality, candidates and the segments a highlight would use.")

    @Argument(help: "The video.") var file: String
    @Flag(help: "Print the analysis as JSON.") var json = false
    @Option(help: "Target highlight length in seconds, for the segments (5...600).") var targetDuration = 30.0
    @Flag(help: "Analyse again even when a cached analysis exists.") var noCache = false
    @OptionGroup var creative: CreativeOptions

    func run() async throws {
        let config = try await CLIConfig.load()
        try runReportingErrors {
            let defaults = config.mediaDefaults()
            var request = HighlightRequest(source: file)
            request.analysis = defaults.template.analysis
            request.weights = defaults.template.weights
            request.selection = defaults.template.selection
            request.reframe = defaults.template.reframe
            creative.apply(to: &request)
            request.selection.targetDuration = targetDuration
            request.cacheDirectory = noCache ? nil : config.analysisCacheDirectory()
            let token = CancellationToken()
            let interrupts = InterruptHandler(token)
            let bar = ProgressBar("analysing")
            let result = try HighlightEngine.make(request, cancellation: token) { _, fraction in
                bar.update(fraction / 0.6)
            }
            bar.finish()
            withExtendedLifetime(interrupts) {}
            if json {
                print(try JSON.encode(result.report))
                return
            }
            let r = result.report
            print(
                String(
                    format: "duration %.2f s, %.3f fps, %d shots, %d candidates%@", r.duration, r.fps, r.shots.count,
                    r.candidates.count, result.cached ? " (cached analysis)" : ""))
            if let d = r.decode {
                var line =
                    "decode: \(d.plan ?? "full"), \(d.framesDecoded) frames decoded, \(d.framesAnalysed) analysed"
                if let groups = d.groups, let ranges = d.refinedRanges {
                    line += String(
                        format: "; %d keyframe groups, %d ranges (%.1f s, %d frames) decoded again in full",
                        groups, ranges, d.refinedSeconds ?? 0, d.refinedFrames ?? 0)
                }
                print(line)
            }
            for b in r.boundaries {
                print(
                    String(
                        format: "  %-8@ at %8.3f s (frame %d)", b.kind.rawValue, b.time, Int((b.time * r.fps).rounded())
                    ))
            }
            if let faces = r.faces {
                print(
                    faces.unavailable.map { "faces: not looked for (\($0))" }
                        ?? "faces: \(faces.tracks.count) tracks in \(faces.looks.count) looks; \(r.peopleMoments ?? 0) people moments chosen")
            }
            print("segments:")
            for s in r.segments {
                print(String(format: "  %8.2f - %8.2f s  score %.2f  %@", s.start, s.end, s.score, s.reason))
            }
        }
    }
}

struct HighlightCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "highlight", abstract: "Make a highlight of the best moments of a video.")

    @Argument(help: "The video.") var file: String
    @Option(name: .shortAndLong, help: "Output MP4 path.") var output: String
    @Option(help: "Highlight length in seconds (5...600).") var targetDuration = 30.0
    @Option(
        help:
            "low (≤480p), medium (≤720p), high (≤1080p), uhd (≤2160p) or original (the video's own pictures, copied where the highlight allows) (default from Config/)."
    )
    var quality: String?
    @Option(help: "cut or crossfade (default from Config/).") var style: String?
    @Option(help: "Also write the analysis JSON here.") var analysis: String?
    @Option(help: "Also write a JPEG poster of the best frame here.") var poster: String?
    @Flag(help: "Analyse again even when a cached analysis exists.") var noCache = false
    @OptionGroup var creative: CreativeOptions

    func validate() throws {
        guard targetDuration >= HighlightEngine.minTarget && targetDuration <= HighlightEngine.maxTarget else {
            throw ValidationError(
                "--target-duration must be between \(Int(HighlightEngine.minTarget)) and \(Int(HighlightEngine.maxTarget)) seconds")
        }
        if let quality, quality != "original", RenderQuality(rawValue: quality) == nil {
            throw ValidationError("--quality must be low, medium, high, uhd or original")
        }
        if let style, HighlightStyle(rawValue: style) == nil {
            throw ValidationError("--style must be cut or crossfade")
        }
    }

    func run() async throws {
        let config = try await CLIConfig.load()
        try runReportingErrors {
            let defaults = config.mediaDefaults()
            // validate() refused unknown names, so a given option always names a quality or style.
            // original: copied where it can be, else encoded up to 2160p.
            var request = defaults.request(
                source: file, quality: quality == "original" ? .uhd : quality.flatMap(RenderQuality.init(rawValue:)),
                style: style.flatMap(HighlightStyle.init(rawValue:)))
            if quality == "original" { request.original = OriginalSettings() }
            request.output = output
            creative.apply(to: &request)
            request.selection.targetDuration = targetDuration
            request.analysisOutput = analysis
            request.posterOutput = poster
            request.cacheDirectory = noCache ? nil : config.analysisCacheDirectory()
            let token = CancellationToken()
            let interrupts = InterruptHandler(token)
            let bar = ProgressBar("highlight")
            let result = try HighlightEngine.make(request, cancellation: token) { _, fraction in bar.update(fraction) }
            bar.finish()
            withExtendedLifetime(interrupts) {}
            let duration = result.render?.duration ?? 0
            print(
                String(
                    format: "%@: %.2f s from %d segments%@%@", output, duration, result.report.segments.count,
                    result.cached ? " (cached analysis)" : "",
                    result.report.render.map { $0.method == .copy ? ", pictures copied" : ", encoded: \($0.reason ?? "")" }
                        ?? ""))
        }
    }
}

/// The creative choices the API takes too: the shape and what the highlight favours.
struct CreativeOptions: ParsableArguments {
    @Option(help: "The shape: source, 16:9, 9:16, 1:1 or 4:5 (the crop keeps faces in frame).") var aspect: String?
    @Option(help: "auto (people first where there are any), people or action.") var focus: String?

    func validate() throws {
        if let aspect, AspectRatio(rawValue: aspect) == nil {
            throw ValidationError("--aspect must be source, 16:9, 9:16, 1:1 or 4:5")
        }
        if let focus, HighlightFocus(rawValue: focus) == nil {
            throw ValidationError("--focus must be auto, people or action")
        }
    }

    /// validate() refused unknown names, so a given option always names a shape or focus.
    func apply(to request: inout HighlightRequest) {
        if let aspect = aspect.flatMap(AspectRatio.init(rawValue:)) { request.aspect = aspect }
        if let focus = focus.flatMap(HighlightFocus.init(rawValue:)) { request.focus = focus }
    }
}
