import Foundation
import AnalysisDecode
import MediaEngine
import MediaPictures
import MediaSynth
import Testing

/// What the app's users actually upload: iPhone video, HEVC Main10 HLG, 60 fps, P-frames only,
/// portrait through the display matrix. Made by MediaSynth's phone preset.
@Suite("PhoneMedia")
struct PhoneMediaTests {
    /// One 4K clip for both checks: 4K HEVC is slow to encode. It is the very clip the decode-plan
    /// test's phone video is (same spec: the run's synthetic-video cache encodes it once for both).
    @Test(
        "a 4K HLG phone video (HEVC Main10, portrait, 60 fps, P-only, 1 s GOP) probes as such and renders to 1080p SDR BT.709 H.264: rotation kept, cuts on the frame, levels tone-mapped"
    )
    func phone4K() throws {
        let dir = Scratch()
        var spec = SynthSpec.phone(width: 3840, height: 2160, frameRate: 60, duration: 1.6)
        spec.cuts = [1.3]
        let source = dir.path("phone.mp4")
        try Synth.write(spec, to: source)

        let sourceInfo = try Probe.probe(source)
        #expect(sourceInfo.video.codec == "hevc")
        #expect(sourceInfo.video.profile == "Main 10")
        #expect(sourceInfo.video.bitDepth == 10 && sourceInfo.video.pixelFormat == "yuv420p10le")
        #expect(
            sourceInfo.video.colorTransfer == "arib-std-b67" && sourceInfo.video.colorPrimaries == "bt2020"
                && sourceInfo.video.colorSpace == "bt2020nc" && sourceInfo.video.isHDR)
        #expect(sourceInfo.video.codedWidth == 3840 && sourceInfo.video.codedHeight == 2160)
        #expect(
            sourceInfo.video.rotation == 90 && sourceInfo.video.displayWidth == 2160
                && sourceInfo.video.displayHeight == 3840)
        #expect(abs(sourceInfo.video.frameRate - 60) < 0.01 && !sourceInfo.video.isVariableFrameRate)
        #expect(sourceInfo.mainAudio?.codec == "aac")
        let types = try pictureTypes(source)
        #expect(types.count == 96)
        #expect(types.first == "I" && !types.contains("B"), "picture types: \(types.joined())")
        let segments = [
            TimeRange(start: 0.2, end: 0.45), TimeRange(start: 0.75, end: 0.95), TimeRange(start: 0.05, end: 0.15)
        ]
        let out = dir.path("out.mp4")
        let result = try Renderer.render(RenderRequest(source: source, segments: segments, output: out))
        #expect(result.width == 1920 && result.height == 1080 && result.rotation == 90)
        #expect(result.frameRate == Rational(60, 1))

        let info = try Probe.probe(out)
        #expect(info.video.codec == "h264" && info.video.pixelFormat == "yuv420p" && info.video.bitDepth == 8)
        #expect(
            info.video.colorTransfer == "bt709" && info.video.colorPrimaries == "bt709"
                && info.video.colorSpace == "bt709")
        #expect(!info.video.isHDR)
        #expect(info.video.rotation == 90 && info.video.displayWidth == 1080 && info.video.displayHeight == 1920)
        #expect(abs(info.video.frameRate - 60) < 0.01)
        let expected = segments.reduce(0) { $0 + $1.duration }
        #expect(abs(info.duration - expected) <= 1.0 / 60 + 0.03, "duration \(info.duration) s, expected \(expected) s")

        let frames = try decodeFrames(out).frames
        #expect(frames.map(\.barcode) == expectedBarcodes(segments, fps: 60))

        let levels = try patchLevels(out, spec: spec, outputWidth: 1920)
        let black = levels[.black] ?? -1, grey = levels[.grey] ?? -1
        let white = levels[.diffuseWhite] ?? -1, peak = levels[.peak] ?? -1
        #expect(black >= 12 && black <= 22, "HLG black stays black: \(levels)")
        #expect(grey >= 85 && grey <= 135, "an 18 % grey card is a mid grey: \(levels)")
        #expect(white >= 190 && white <= 230, "diffuse white is near SDR white: \(levels)")
        #expect(peak >= 225 && peak <= 236, "the 1000-nit peak is white, not clipped past it: \(levels)")
        #expect(black < grey && grey < white && white < peak)
    }

    @Test("a 1080p phone video renders across GOPs frame-accurately, in any order, with its flash white")
    func renderAcrossGOPs() throws {
        let dir = Scratch()
        var spec = SynthSpec.phone(width: 1920, height: 1080, duration: 3.5)
        spec.cuts = [1.2, 2.4]
        spec.flashes = [2.0]
        spec.flashFrames = 3
        let source = dir.path("phone.mp4")
        try Synth.write(spec, to: source)
        let types = try pictureTypes(source)
        let keyframes = types.indices.filter { types[$0] == "I" }
        #expect(keyframes == [0, 60, 120, 180], "one keyframe a second: \(keyframes)")
        #expect(!types.contains("B"))

        // Mid-GOP starts, a segment ending on a GOP boundary, one going back in time, the flash.
        let segments = [
            TimeRange(start: 2.55, end: 3.0), TimeRange(start: 1.5, end: 2.0), TimeRange(start: 0.4, end: 0.7),
            TimeRange(start: 1.95, end: 2.2)
        ]
        let out = dir.path("out.mp4")
        var request = RenderRequest(source: source, segments: segments, output: out)
        request.quality = .medium
        let result = try Renderer.render(request)
        #expect(result.width == 1280 && result.height == 720 && result.rotation == 90)
        let info = try Probe.probe(out)
        #expect(info.video.rotation == 90 && info.video.displayWidth == 720 && info.video.displayHeight == 1280)
        let expected = segments.reduce(0) { $0 + $1.duration }
        #expect(abs(result.duration - expected) <= 1.0 / 60)

        let frames = try decodeFrames(out).frames
        #expect(frames.map(\.barcode) == expectedBarcodes(segments, fps: 60))
        let flashes = frames.filter { $0.meanLuma > 200 }.map(\.barcode)
        #expect(flashes == [120, 121, 122], "the three flash frames, and only them, are white: \(flashes)")
        let shots = frames.filter { $0.meanLuma <= 200 }.map(\.meanLuma)
        #expect(
            shots.allSatisfy { $0 > 25 && $0 < 190 }, "shots keep mid levels: \(shots.min() ?? 0)...\(shots.max() ?? 0)"
        )
    }

    // MARK: Helpers

    /// The source frame index every output frame should show.
    func expectedBarcodes(_ segments: [TimeRange], fps: Int) -> [Int] {
        segments.flatMap { range -> [Int] in
            let first = Int((range.start * Double(fps)).rounded())
            return Array(first..<(first + Int((range.duration * Double(fps)).rounded())))
        }
    }

    /// The mean 8-bit luma at the centre of each HLG calibration patch, on the output's first frame.
    func patchLevels(_ path: String, spec: SynthSpec, outputWidth: Int) throws -> [SynthPatch.Level: Double] {
        var levels: [SynthPatch.Level: Double] = [:]
        var options = AnalysisOptions()
        options.maxSide = 4096
        options.skipLoopFilter = false
        try AnalysisDecoder(path: path, options: options).run(onFrame: { f in
            guard f.index == 0 else { return }
            let scale = Double(f.width) / Double(spec.width)
            for patch in spec.hlgPatches {
                let cx = Int((Double(patch.x) + Double(patch.size) / 2) * scale)
                let cy = Int((Double(patch.y) + Double(patch.size) / 2) * scale)
                var sum = 0, n = 0
                for y in (cy - 4)...(cy + 4) {
                    for x in (cx - 4)...(cx + 4) { sum += Int(f.luma[y * f.lumaStride + x]); n += 1 }
                }
                levels[patch.level] = Double(sum) / Double(n)
            }
        })
        return levels
    }

    /// Picture types (I, P, B) of the video frames in presentation order, from ffprobe.
    func pictureTypes(_ path: String) throws -> [String] {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = [
            "ffprobe", "-v", "error", "-select_streams", "v:0", "-show_entries", "frame=pict_type",
            "-of", "csv=p=0", path
        ]
        let pipe = Pipe()
        process.standardOutput = pipe
        try process.run()
        let data = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        #expect(process.terminationStatus == 0, "ffprobe (from the ffmpeg package) must be installed")
        return String(decoding: data, as: UTF8.self).split(whereSeparator: \.isNewline)
            .map { $0.trimmingCharacters(in: .whitespaces).trimmingCharacters(in: CharacterSet(charactersIn: ",")) }
    }
}
