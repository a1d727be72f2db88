import MediaPictures
import ArgumentParser
import FFmpeg
import Foundation
import MediaEngine
import MomentsConfig

struct RenderCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "render", abstract: "Render source time ranges, in order, to an MP4 (H.264 + AAC).")

    @Argument(help: "The source video.") var file: String
    @Option(help: "Source ranges in seconds, e.g. 5.0-10.0,20.0-25.0") var segments: String
    @Option(help: "Seconds of crossfade between segments (0: hard cuts; default from Config/).") var crossfade: Double?
    @Option(help: "low (≤480p), medium (≤720p) or high (≤1080p) (default from Config/).") var quality: String?
    @Option(help: "libx264 preset (default from Config/).") var preset: String?
    @Option(name: .shortAndLong, help: "Output MP4 path.") var output: String
    @Option(help: "Also write a JPEG poster of the output to this path.") var poster: String?
    @Option(help: "Output time of the poster frame, in seconds.") var posterTime = 0.0
    @Option(help: "An earlier render of the same footage to copy the segments it holds from (hard cuts only).")
    var reuseFrom: String?
    @Option(help: "The earlier render's segments, in this source's seconds, e.g. 2.0-7.0,12.0-15.0.") var reuseSegments:
        String?
    @Flag(
        help:
            "Copy the source's coded pictures instead of encoding (quality=original): each segment starts at the keyframe at or before its start."
    )
    var copy = false
    @Flag(help: "Print the result as JSON.") var json = false

    func validate() throws {
        guard TimeRange.parseList(segments) != nil else {
            throw ValidationError("--segments must look like 5.0-10.0,20.0-25.0")
        }
        if let quality, RenderQuality(rawValue: quality) == nil {
            throw ValidationError("--quality must be low, medium or high")
        }
        if let crossfade, crossfade < 0 { throw ValidationError("--crossfade must not be negative") }
        if (reuseFrom == nil) != (reuseSegments == nil) || reuseSegments.map({ TimeRange.parseList($0) == nil }) == true
        {
            throw ValidationError(
                "--reuse-from and --reuse-segments go together; segments look like 5.0-10.0,20.0-25.0")
        }
    }

    func run() async throws {
        let config = try await CLIConfig.load()
        try runReportingErrors {
            let media = config.mediaDefaults(), defaults = media.template
            var request = RenderRequest(source: file, segments: TimeRange.parseList(segments) ?? [], output: output)
            request.quality = quality.flatMap(RenderQuality.init(rawValue:)) ?? defaults.quality
            request.crossfade = crossfade ?? media.renderCrossfadeSeconds
            request.preset = preset ?? defaults.preset
            request.audioFade = defaults.audioFade
            request.maxFrameRate = defaults.maxFrameRate
            if let reuseFrom, let earlier = reuseSegments.flatMap(TimeRange.parseList) {
                request.reuse = RenderReuse(path: reuseFrom, segments: earlier)
            }
            let token = CancellationToken()
            let interrupts = InterruptHandler(token)
            let bar = ProgressBar("rendering")
            let result: RenderResult
            if copy {
                let table = try PacketTable.read(file, limits: request.limits, cancellation: token)
                request.segments = request.segments.map {
                    TimeRange(start: table.keyframe(atOrBefore: $0.start) ?? $0.start, end: $0.end)
                }
                result = try CopyRenderer.render(request, table: table, cancellation: token) { bar.update($0) }
            } else {
                result = try Renderer.render(request, cancellation: token) { bar.update($0) }
            }
            bar.finish()
            withExtendedLifetime(interrupts) {}
            if let poster { try Poster.write(from: output, at: posterTime, to: poster) }
            if json {
                print(try JSON.encode(result))
            } else {
                print(
                    String(
                        format: "%@: %.3f s, %dx%d @ %@ fps, %d frames (%d copied), %d bytes", result.output,
                        result.duration,
                        result.width, result.height, result.frameRate.description, result.frames, result.copiedFrames,
                        result.fileSize))
            }
        }
    }
}

struct PosterCommand: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "poster", abstract: "Write a JPEG of one frame.")

    @Argument(help: "The video.") var file: String
    @Option(help: "Time of the frame, in seconds.") var at = 0.0
    @Option(name: .shortAndLong, help: "Output JPEG path.") var output: String

    func run() throws {
        try runReportingErrors { try Poster.write(from: file, at: at, to: output) }
    }
}
