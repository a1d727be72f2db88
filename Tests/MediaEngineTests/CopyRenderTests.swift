import Foundation
import AnalysisDecode
import MediaEngine
import MediaPictures
import MediaSynth
import Testing

/// `quality=original`'s render: the source's own coded pictures copied, the sound cut to them.
@Suite("Copy render")
struct CopyRenderTests {
    @Test(
        "a P-only HEVC Main10 HLG phone video copies bit for bit: codec, profile, size, colour, HDR boxes, rotation, hvc1, moov first, sound in step at every join"
    )
    func phoneHLG() throws {
        let dir = Scratch()
        var spec = SynthSpec.phone(width: 1280, height: 720, frameRate: 30, duration: 6)
        spec.hdrStaticMetadata = true
        // A flash and its beep in each copied segment (one of them right at a keyframe).
        spec.flashes = [1.3, 3.0, 4.6]
        spec.beeps = spec.flashes
        let source = dir.path("phone.mp4")
        try Synth.write(spec, to: source)
        let table = try PacketTable.read(source, limits: DecodeLimits(), cancellation: nil)
        #expect(table.keyframeTimes.map { ($0 * 30).rounded() } == [0, 30, 60, 90, 120, 150])
        #expect(!table.reorders)
        // Starts on keyframes; ends anywhere (no B-frames): 1.0-1.9, 4.0-5.2, 3.0-3.6 (any order).
        let segments = [
            TimeRange(start: 1.0, end: 1.9), TimeRange(start: 4.0, end: 5.2), TimeRange(start: 3.0, end: 3.6)
        ]
        let out = dir.path("copy.mp4")
        var request = RenderRequest(source: source, segments: segments, output: out)
        request.quality = .uhd
        // Each segment is held to the limits on its own: the 2 s from one to the next is no jump.
        request.limits.maxTimestampJump = 1.5
        let result = try CopyRenderer.render(request, table: table)
        #expect(result.sourceSegments == segments)
        #expect(result.frames == 27 + 36 + 18 && result.copiedFrames == result.frames)

        let (sourceStream, copyStream) = try (ffprobeStream(source), ffprobeStream(out))
        for key in [
            "codec_name", "profile", "width", "height", "pix_fmt", "color_range", "color_space", "color_transfer",
            "color_primaries", "codec_tag_string"
        ] {
            #expect(copyStream[key] == sourceStream[key], "\(key): \(copyStream[key] ?? "-") vs \(sourceStream[key] ?? "-")")
        }
        #expect(copyStream["codec_tag_string"] == "hvc1" && copyStream["color_transfer"] == "arib-std-b67")
        let boxes = try Data(contentsOf: URL(fileURLWithPath: out))
        for box in ["mdcv", "clli", "colr"] {
            #expect(boxes.range(of: Data(box.utf8)) != nil, "the copy has no \(box) box")
        }
        let moov = try #require(boxes.range(of: Data("moov".utf8))), mdat = try #require(boxes.range(of: Data("mdat".utf8)))
        #expect(moov.lowerBound < mdat.lowerBound, "moov comes first")
        let info = try Probe.probe(out)
        #expect(info.video.rotation == 90 && info.video.isHDR)

        // Every picture is the source's, in the segments' order, and decodes without an error.
        let (sourceHashes, copyHashes) = try (frameHashes(source), frameHashes(out))
        let expected = segments.flatMap { r in Array(Int((r.start * 30).rounded())..<Int((r.end * 30).rounded())) }
        #expect(copyHashes == expected.map { sourceHashes[$0] })
        #expect(try decodeErrors(out).isEmpty)

        // Each flash and its beep stay within one frame of each other.
        let decoded = try decodeFrames(out)
        let flashes = decoded.frames.filter { $0.meanLuma > 200 }.map(\.time)
        let beeps = RenderTests().onsets(decoded.audio, rate: 16_000)
        #expect(flashes.count == 3 && beeps.count == 3, "flashes \(flashes), beeps \(beeps)")
        for (flash, beep) in zip(flashes, beeps) {
            #expect(abs(flash - beep) <= 1.0 / 30, "flash at \(flash) s, beep at \(beep) s")
        }
        #expect(abs(Double(result.audioSamples) / 48_000 - result.duration) < 0.001)
    }

    @Test(
        "H.264 with B-frames copies bit for bit and each segment ends where no later picture is needed"
    )
    func bFrames() throws {
        let dir = Scratch()
        let source = try dir.video {
            $0.duration = 6; $0.width = 640; $0.height = 360; $0.fixedBFrames = 2; $0.keyframeIntervalSeconds = 1
            $0.preset = "veryfast"
        }
        let table = try PacketTable.read(source, limits: DecodeLimits(), cancellation: nil)
        #expect(table.reorders)
        let segments = [TimeRange(start: 2.0, end: 2.5), TimeRange(start: 4.0, end: 5.95)]
        let out = dir.path("copy.mp4")
        let result = try CopyRenderer.render(RenderRequest(source: source, segments: segments, output: out), table: table)
        let copied = try #require(result.sourceSegments)
        for (asked, made) in zip(segments, copied) {
            #expect(made.start == asked.start)
            // The clean cut at or before the end: within a group of one anchor and its B-frames.
            #expect(made.end <= asked.end + 0.5 / 30 && made.end > asked.end - 3.5 / 30, "\(made) for \(asked)")
        }
        let (sourceHashes, copyHashes) = try (frameHashes(source), frameHashes(out))
        let expected = copied.flatMap { r in Array(Int((r.start * 30).rounded())..<Int((r.end * 30).rounded())) }
        #expect(copyHashes == expected.map { sourceHashes[$0] })
        #expect(try decodeErrors(out).isEmpty)
        #expect(try ffprobeStream(out)["codec_name"] == "h264")
    }

    @Test("a start between keyframes is refused: the selection snaps starts first")
    func startOffKeyframe() throws {
        let dir = Scratch()
        let source = try dir.video { $0.duration = 3; $0.keyframeIntervalSeconds = 1; $0.fixedGOPWithoutBFrames = true }
        let table = try PacketTable.read(source, limits: DecodeLimits(), cancellation: nil)
        #expect(table.keyframe(atOrBefore: 1.6) == 1.0)
        expectMediaError(.invalidRange, path: source) {
            _ = try CopyRenderer.render(
                RenderRequest(source: source, segments: [TimeRange(start: 1.5, end: 2)], output: dir.path("o.mp4")),
                table: table)
        }
        #expect(dir.contents == ["source.mp4"])
    }
}

/// The first video stream's fields as ffprobe prints them.
func ffprobeStream(_ path: String) throws -> [String: String] {
    let text = try runTool(["ffprobe", "-v", "error", "-select_streams", "v:0", "-show_streams", path])
    var fields: [String: String] = [:]
    for line in text.split(whereSeparator: \.isNewline) {
        let parts = line.split(separator: "=", maxSplits: 1).map(String.init)
        if parts.count == 2 { fields[parts[0]] = parts[1] }
    }
    return fields
}

/// The MD5 of every decoded video frame, in presentation order (ffmpeg's framemd5).
func frameHashes(_ path: String) throws -> [String] {
    let text = try runTool(["ffmpeg", "-v", "error", "-i", path, "-map", "0:v:0", "-f", "framemd5", "-"])
    return text.split(whereSeparator: \.isNewline).filter { !$0.hasPrefix("#") }.compactMap {
        $0.split(separator: ",").last.map { $0.trimmingCharacters(in: .whitespaces) }
    }
}

/// What ffmpeg says decoding the whole file (nothing: every frame decoded cleanly).
func decodeErrors(_ path: String) throws -> String {
    try runTool(["ffmpeg", "-v", "error", "-i", path, "-f", "null", "-"], stderr: true)
}

/// Runs a tool of the ffmpeg package; fails the test when it is missing.
func runTool(_ arguments: [String], stderr: Bool = false) throws -> String {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
    process.arguments = arguments
    let pipe = Pipe()
    if stderr {
        process.standardError = pipe
        process.standardOutput = FileHandle.nullDevice
    } else {
        process.standardOutput = pipe
    }
    try process.run()
    let data = pipe.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    #expect(process.terminationStatus == 0, "\(arguments[0]) (from the ffmpeg package) must be installed")
    return String(decoding: data, as: UTF8.self)
}
