import Analysis
import FFmpeg
import Foundation
import MediaEngine

/// `quality=original`: the highlight copies the source's coded pictures where it can.
public struct OriginalSettings: Sendable, Codable, Equatable {
    public var snap = KeyframeSnapSettings()
    /// The largest shorter side copied (the plan's `maxOutputSide`); a larger video is encoded
    /// at `HighlightRequest.quality`. Nil: any size.
    public var maxShortSide: Int?
    public init(maxShortSide: Int? = nil) { self.maxShortSide = maxShortSide }

    /// Codecs whose pictures are copied into the MP4 (phones record these).
    public static let copyableCodecs: Set<String> = ["h264", "hevc"]
}

/// How the highlight's pictures were made, and why they were encoded when the original was asked for.
public struct RenderChoice: Sendable, Codable, Equatable {
    public enum Method: String, Sendable, Codable {
        /// The source's own coded pictures, copied.
        case copy
        /// Decoded and encoded again (H.264).
        case encode
    }

    public var method: Method
    /// Why the pictures were encoded although the original was asked for (nil when copied).
    public var reason: String?
    /// Copied: the largest move of a start onto a keyframe, in seconds.
    public var largestStartShift: Double?

    public init(method: Method, reason: String? = nil, largestStartShift: Double? = nil) {
        self.method = method
        self.reason = reason
        self.largestStartShift = largestStartShift
    }
}

extension HighlightEngine {
    /// What copying needs: the starts on keyframes and the ends on clean cuts, and the packet table
    /// the copy reads; or the reason the highlight is encoded instead.
    struct CopyDecision {
        var segments: [Segment]
        var choice: RenderChoice
        var table: PacketTable?
    }

    /// Decides between copying and encoding for `quality=original` (`request.original` set).
    static func decideCopy(
        _ request: HighlightRequest, settings: OriginalSettings, analysis: VideoAnalysis,
        segments: [Segment], selection: SelectionSettings, cancellation: CancellationToken?
    ) throws(MediaError) -> CopyDecision {
        func encode(_ reason: String) -> CopyDecision {
            CopyDecision(segments: segments, choice: RenderChoice(method: .encode, reason: reason), table: nil)
        }
        if request.style == .crossfade { return encode("a crossfade blends the pictures of two moments") }
        if request.aspect.window(displayWidth: analysis.width, height: analysis.height) != nil {
            return encode("the \(request.aspect.rawValue) shape crops the picture")
        }
        if let limit = settings.maxShortSide, min(analysis.width, analysis.height) > limit {
            return encode("the video is larger than the \(limit)p the plan copies")
        }
        let codec = try Probe.probe(request.source).video.codec
        guard OriginalSettings.copyableCodecs.contains(codec) else {
            return encode("\(codec) pictures are not copied into an MP4")
        }
        let table: PacketTable
        do {
            table = try PacketTable.read(request.source, limits: request.limits, cancellation: cancellation)
        } catch {
            if error.kind == .cancelled { throw error }
            return encode("the video's pictures could not be indexed")
        }
        let snapped: [Segment]
        switch Selector.snapToKeyframes(
            segments, keyframes: table.keyframeTimes, analysis: analysis, settings: settings.snap,
            selection: selection)
        {
        case .failure(let refusal): return encode(refusal.reason)
        case .success(let moved): snapped = moved
        }
        // The ends the copy will have: each on the clean cut at or before it.
        let runs: [CopyRun]
        do {
            runs = try CopyPlan.runs(
                table, ranges: snapped.map { TimeRange(start: $0.start, end: $0.end) }, path: request.source)
        } catch {
            return encode("the video's pictures cannot be cut there without encoding")
        }
        var exact = snapped
        for i in exact.indices {
            exact[i].start = table.seconds(runs[i].start)
            exact[i].end = table.seconds(runs[i].end)
        }
        let sorted = segments.sorted { $0.start < $1.start }
        let shift = zip(sorted, exact).map { abs($0.start - $1.start) }.max() ?? 0
        return CopyDecision(
            segments: exact, choice: RenderChoice(method: .copy, largestStartShift: (shift * 1000).rounded() / 1000),
            table: table)
    }
}
