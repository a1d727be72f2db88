import Foundation
import AnalysisDecode
import MediaEngine
import MediaPictures
import MediaSynth
import Testing

/// Files as cameras, broadcast captures and older Windows exports write them: they open through
/// the same safe path as a phone's MP4, and every range the analysis reports can be rendered.
@Suite("Capture formats")
struct CaptureFormatTests {
    /// The first frame's barcode of each rendered segment, in order.
    static func segmentStarts(_ output: String, ranges: [TimeRange], frameRate: Double = 30) throws -> [Int] {
        let frames = try decodeFrames(output).frames
        var starts: [Int] = []
        var first = 0
        for range in ranges {
            guard first < frames.count else { break }
            starts.append(frames[first].barcode)
            first += Int((range.duration * frameRate).rounded())
        }
        return starts
    }

    /// The source frame on screen at each range's start, by the analysis's clock (what a highlight
    /// of these ranges must begin its segments with).
    static func expectedStarts(_ analysed: [DecodedFrame], _ ranges: [TimeRange]) -> [Int] {
        ranges.map { range in analysed.last { $0.time <= range.start + 0.001 }?.barcode ?? -1 }
    }

    /// Runs the ffmpeg CLI (the ffmpeg package, which `make test` installs); fails loudly when absent.
    static func ffmpeg(_ arguments: [String]) throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["ffmpeg", "-hide_banner", "-loglevel", "error", "-y"] + arguments
        process.standardOutput = FileHandle.nullDevice
        try process.run()
        process.waitUntilExit()
        #expect(
            process.terminationStatus == 0,
            "the ffmpeg CLI (Debian package ffmpeg) must be installed: it writes the WMV codecs Moments only decodes")
        guard process.terminationStatus == 0 else { throw CocoaError(.fileWriteUnknown) }
    }

    /// 10 hours in (a camcorder's or a broadcast capture's clock), and 20 s before the 33-bit
    /// 90 kHz clock wraps (every 26.5 hours of a broadcast), so the file's timestamps wrap mid-way.
    @Test(
        "an MPEG-TS whose clock starts hours in renders every range it analysed, from the start to the last seconds",
        arguments: [10.0 * 3600, Double(1 << 33) / 90_000 - 20])
    func transportStreamStartingHoursIn(offset: Double) throws {
        let dir = Scratch()
        let source = try dir.video {
            $0.width = 320; $0.height = 176; $0.duration = 60; $0.cuts = [12, 24, 36, 48];
            $0.keyframeIntervalSeconds = 2
        }
        let capture = dir.path("capture.ts")
        try Remuxer.remux(source, to: capture, container: "mpegts", offset: offset)
        let info = try Probe.probe(capture)
        #expect(info.container == "mpegts")
        #expect(abs(info.duration - 60) < 0.5, "duration \(info.duration)")

        // The analysis counts time from the container's start, like the render.
        let analysed = try decodeFrames(capture).frames
        #expect(analysed.count >= 1790)
        #expect((analysed.first?.time ?? 99) < 0.1 && (analysed.last?.time ?? 0) > 59.5)

        let ranges = [
            TimeRange(start: 1, end: 2), TimeRange(start: 38.2, end: 39.2), TimeRange(start: 42.9, end: 44.9),
            TimeRange(start: 52.4, end: 53), TimeRange(start: 58, end: 59.5)
        ]
        let out = dir.path("highlight.mp4")
        let result = try Renderer.render(RenderRequest(source: capture, segments: ranges, output: out))
        #expect(abs(result.duration - ranges.reduce(0) { $0 + $1.duration }) <= 1.0 / 30)
        let starts = try Self.segmentStarts(out, ranges: ranges)
        #expect(starts == Self.expectedStarts(analysed, ranges))
        #expect(zip(starts, ranges).allSatisfy { abs($0 - Int(($1.start * 30).rounded())) <= 1 })
        // Each range alone too (a re-cut renders one range at a time from a cold open).
        for range in ranges.dropFirst() {
            let one = dir.path("one.mp4")
            _ = try Renderer.render(RenderRequest(source: capture, segments: [range], output: one))
            #expect(
                try Self.segmentStarts(one, ranges: [range]) == Self.expectedStarts(analysed, [range]), "range \(range)"
            )
        }
    }

    /// Issue 40's capture: keyframes 10 s apart, the last 5 s before the end, the clock 10 h in. A
    /// seek lands past the last keyframe, where none follows before the end of the file: the
    /// reading must be put on the keyframe before the landing.
    @Test(
        "an MPEG-TS 10 h in with its last keyframe seconds before the end renders every range, encoded and copied"
    )
    func transportStreamPastItsLastKeyframe() throws {
        let dir = Scratch()
        let source = try dir.video {
            $0.width = 320; $0.height = 176; $0.duration = 45; $0.keyframeIntervalSeconds = 10
            $0.fixedGOPWithoutBFrames = true; $0.flashes = [43]
        }
        let capture = dir.path("capture.ts")
        try Remuxer.remux(source, to: capture, container: "mpegts", offset: 36_000)
        let table = try PacketTable.read(capture, limits: DecodeLimits(), cancellation: nil)
        #expect(table.keyframeTimes.map { $0.rounded() } == [0, 10, 20, 30, 40])
        // Encoded: every 2 s window, those after the last keyframe included.
        for start in stride(from: 0.0, to: 44.0, by: 2.0) {
            let range = TimeRange(start: start + 0.9, end: min(start + 2.9, 44.9))
            let out = dir.path("encoded.mp4")
            let result = try Renderer.render(RenderRequest(source: capture, segments: [range], output: out))
            #expect(abs(result.duration - range.duration) <= 1.0 / 30, "range \(range)")
        }
        // Copied: each keyframe's group, the last one to the end; the flash at 43 s is in the last.
        let groups = table.keyframeTimes.map { TimeRange(start: $0, end: min($0 + 4.8, 44.9)) }
        for range in groups {
            let out = dir.path("copied.mp4")
            let result = try CopyRenderer.render(RenderRequest(source: capture, segments: [range], output: out), table: table)
            #expect(result.sourceSegments?.first?.start == range.start, "range \(range)")
            #expect(abs(result.duration - range.duration) <= 1.0 / 30, "range \(range): \(result.duration) s")
            #expect(try decodeErrors(out).isEmpty, "range \(range)")
        }
        let last = dir.path("last.mp4")
        _ = try CopyRenderer.render(RenderRequest(source: capture, segments: [groups[4]], output: last), table: table)
        let flashes = try decodeFrames(last).frames.filter { $0.meanLuma > 200 }.map(\.time)
        #expect(flashes.count == 1 && abs((flashes.first ?? 0) - 3) < 0.05, "flash at \(flashes) s of the copy")
    }

    /// Keyframe schedules of issue 40's captures (cut with `ffmpeg -ss 20 -t 40 -c copy
    /// -output_ts_offset 36000`): keyframes 1 to 10 s apart at irregular times, the last 7.3 s
    /// before the end; and one whose last group lasts 35 s, more packets than a seek's check used
    /// to read before it took a landing without a keyframe in sight for a good one.
    static let irregularKeyframes: [[Double]] = [
        [0, 1, 5, 11, 13.5, 23, 30.5, 37.67],
        [0, 1, 3.5, 9.67]
    ]

    /// Issue 40, item 8: an MPEG-TS has no index, and FFmpeg's seek in it lands on any packet at
    /// or before the target, not on a keyframe; past the last keyframe nothing after the landing
    /// could be decoded ("no picture could be decoded for segment 42.89-44.93 s").
    @Test(
        "an MPEG-TS 10 h in with irregular keyframes renders every 2 s window, those after its last keyframe included",
        arguments: irregularKeyframes)
    func transportStreamWithIrregularKeyframes(keyframes: [Double]) throws {
        let dir = Scratch()
        let source = try dir.video {
            $0.width = 320; $0.height = 176; $0.duration = 45; $0.keyframeTimes = keyframes
        }
        let capture = dir.path("capture.ts")
        try Remuxer.remux(source, to: capture, container: "mpegts", offset: 36_000)
        let table = try PacketTable.read(capture, limits: DecodeLimits(), cancellation: nil)
        // The container starts with the sound, 21 ms before the first picture.
        let first = table.keyframeTimes.first ?? 0
        #expect(table.keyframeTimes.map { (($0 - first) * 30).rounded() } == keyframes.map { ($0 * 30).rounded() })
        let analysed = try decodeFrames(capture).frames
        #expect(analysed.count == 45 * 30)

        // Encoded: every 2 s window, each from a cold open.
        for start in stride(from: 0.0, to: 44.0, by: 2.0) {
            let range = TimeRange(start: start + 0.89, end: min(start + 2.93, 44.93))
            let out = dir.path("encoded.mp4")
            do {
                let result = try Renderer.render(RenderRequest(source: capture, segments: [range], output: out))
                #expect(abs(result.duration - range.duration) <= 1.0 / 30, "range \(range)")
                let frames = try decodeFrames(out).frames
                #expect(abs(Double(frames.count) - range.duration * 30) <= 1, "range \(range): \(frames.count) frames")
                #expect(abs(try Probe.probe(out).duration - range.duration) <= 0.05, "range \(range)")
                #expect(frames.first?.barcode == Self.expectedStarts(analysed, [range]).first, "range \(range)")
            } catch {
                Issue.record("range \(range): \(error)")
            }
        }
        // Copied: 2 s from each keyframe (the search and the positioning for the copy's own reading).
        for (key, scheduled) in zip(table.keyframeTimes, keyframes) {
            let range = TimeRange(start: key, end: min(key + 2, 44.9))
            let out = dir.path("copied.mp4")
            do {
                let result = try CopyRenderer.render(
                    RenderRequest(source: capture, segments: [range], output: out), table: table)
                #expect(result.sourceSegments?.first?.start == range.start, "range \(range)")
                #expect(try decodeErrors(out).isEmpty, "range \(range)")
                #expect(
                    try decodeFrames(out).frames.first?.barcode == Int((scheduled * 30).rounded()), "range \(range)")
            } catch {
                Issue.record("range \(range): \(error)")
            }
        }
    }

    @Test("a WMV (ASF with WMV2 video and WMA sound) is accepted, analysed and rendered")
    func windowsMediaVideo() throws {
        let dir = Scratch()
        let source = try dir.video {
            $0.width = 320; $0.height = 176; $0.duration = 6; $0.cuts = [3]
        }
        let wmv = dir.path("camera.wmv")
        try Self.ffmpeg(["-i", source, "-c:v", "wmv2", "-q:v", "2", "-c:a", "wmav2", "-b:a", "128k", wmv])
        let info = try Probe.probe(wmv)
        #expect(info.container == "asf")
        #expect(info.video.codec == "wmv2" && info.audio.first?.codec == "wmav2")
        let analysed = try decodeFrames(wmv).frames
        #expect(analysed.count >= 175)
        let ranges = [TimeRange(start: 0.5, end: 1.5), TimeRange(start: 3.5, end: 5)]
        let out = dir.path("highlight.mp4")
        _ = try Renderer.render(RenderRequest(source: wmv, segments: ranges, output: out))
        #expect(try Self.segmentStarts(out, ranges: ranges) == Self.expectedStarts(analysed, ranges))
        // ffmpeg starts the ASF's sound before its first picture (43 ms here): the clock both
        // the analysis and the render count from is the file's, a frame or two off the MP4's.
        #expect(zip(Self.expectedStarts(analysed, ranges), [15, 105]).allSatisfy { abs($0 - $1) <= 2 })
    }
}
