import Foundation
import AnalysisDecode
import MediaEngine
import MediaPictures
import MediaSynth
import Testing

@Suite("Poster and CLI")
struct PosterAndCLITests {
    @Test("a poster is a JPEG of the frame on screen at the asked time")
    func poster() throws {
        let dir = Scratch()
        let source = try dir.video {
            $0.duration = 2; $0.cuts = [1]
        }
        let poster = dir.path("poster.jpg")
        try Poster.write(from: source, at: 1.5, to: poster)
        let bytes = try Data(contentsOf: URL(fileURLWithPath: poster))
        #expect(bytes.starts(with: [0xFF, 0xD8, 0xFF]))
        let info = try Probe.probe(poster, allowStillImage: true)
        #expect(info.video.codec == "mjpeg" && info.video.codedWidth == 320 && info.video.codedHeight == 240)
        var codes: [Int] = []
        var options = AnalysisOptions()
        options.maxSide = 4096
        options.allowStillImage = true
        try AnalysisDecoder(path: poster, options: options).run(onFrame: { f in
            codes.append(Barcode.read(luma: f.luma, width: f.width, height: f.height, stride: f.lumaStride))
        })
        #expect(codes == [45])
    }

    @Test("a poster of a phone HLG video is tone-mapped to SDR: black stays black, diffuse white is near white")
    func posterHDR() throws {
        let dir = Scratch()
        let source = dir.path("phone.mp4")
        let phone = SynthSpec.phone(width: 640, height: 360, frameRate: 30, duration: 1, rotation: 0)
        try Synth.write(phone, to: source)
        let poster = dir.path("poster.jpg")
        try Poster.write(from: source, at: 0.5, to: poster)
        // Read back as the analysis sees a JPEG: 8-bit, limited range (SDR white 235).
        var options = AnalysisOptions()
        options.maxSide = 4096
        options.allowStillImage = true
        var levels: [Int] = []
        let side = phone.hlgPatches[0].size
        try AnalysisDecoder(path: poster, options: options).run(onFrame: { f in
            #expect(f.width == 640 && f.height == 360)
            levels = SynthPatch.Level.allCases.indices.map { i in
                Int(f.luma[(side / 2) * f.lumaStride + i * side + side / 2])
            }
        })
        #expect(levels.count == 4)
        guard levels.count == 4 else { return }
        #expect(levels[0] < 30, "black \(levels)")
        #expect(levels[0] < levels[1] && levels[1] < levels[2] && levels[2] <= levels[3], "\(levels)")
        // HLG's diffuse white (signal 0.75) is code 180 when its values are copied as they are.
        #expect(levels[2] > 195, "diffuse white \(levels)")
    }

    /// The built `moments` executable, beside the test bundle.
    var moments: URL {
        var dir = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
        if dir.lastPathComponent.hasSuffix(".xctest") { dir.deleteLastPathComponent() }
        return dir.appendingPathComponent("moments")
    }

    func run(_ arguments: [String]) throws -> (status: Int32, out: String, err: String) {
        let process = Process()
        process.executableURL = moments
        process.arguments = arguments
        let out = Pipe(), err = Pipe()
        process.standardOutput = out
        process.standardError = err
        try process.run()
        let o = out.fileHandleForReading.readDataToEndOfFile(), e = err.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return (process.terminationStatus, String(decoding: o, as: UTF8.self), String(decoding: e, as: UTF8.self))
    }

    @Test("moments probe --json and moments render succeed with status 0")
    func cliSuccess() throws {
        try #require(
            FileManager.default.isExecutableFile(atPath: moments.path),
            "build the moments executable first (swift build): \(moments.path)")
        let dir = Scratch()
        let source = try dir.video { $0.duration = 3 }
        let probe = try run(["probe", source, "--json"])
        #expect(probe.status == 0)
        let json = try JSONSerialization.jsonObject(with: Data(probe.out.utf8)) as? [String: Any]
        #expect((json?["video"] as? [String: Any])?["display_width"] as? Int == 320)
        let out = dir.path("out.mp4")
        let render = try run([
            "render", source, "--segments", "0.5-1.5,2-2.5", "--crossfade", "0.1", "--quality", "low", "-o", out
        ])
        #expect(render.status == 0, "\(render.err)")
        #expect(FileManager.default.fileExists(atPath: out))
        // An earlier render's pictures copied where the new edit shows the same frames.
        let hard = dir.path("hard.mp4"), again = dir.path("again.mp4")
        #expect(try run(["render", source, "--segments", "0.5-1.5,2-2.5", "-o", hard]).status == 0)
        let reused = try run([
            "render", source, "--segments", "0.5-1.5,2-2.9", "--reuse-from", hard, "--reuse-segments=0.5-1.5,2-2.5",
            "-o", again
        ])
        #expect(reused.status == 0 && reused.out.contains("(45 copied)"), "\(reused.out) \(reused.err)")
    }

    @Test("moments sample --planted writes the 60 s planted-highlight layout the benchmark scores")
    func plantedSample() throws {
        try #require(
            FileManager.default.isExecutableFile(atPath: moments.path),
            "build the moments executable first (swift build): \(moments.path)")
        let dir = Scratch()
        let out = dir.path("planted.mp4")
        let result = try run(["sample", "--planted", "--width", "160", "--height", "96", "-o", out])
        #expect(result.status == 0, "\(result.err)")
        let info = try Probe.probe(out)
        #expect(abs(info.duration - 60) < 0.1 && info.video.displayWidth == 160)
    }

    @Test("segment lists parse, negative bounds too")
    func segmentLists() {
        #expect(TimeRange.parseList("5.0-10.0,20-25") == [TimeRange(start: 5, end: 10), TimeRange(start: 20, end: 25)])
        #expect(TimeRange.parseList("-3.0--0.7, 1-2") == [TimeRange(start: -3, end: -0.7), TimeRange(start: 1, end: 2)])
        #expect(TimeRange.parseList("5") == nil && TimeRange.parseList("a-b") == nil && TimeRange.parseList("") == nil)
    }

    @Test("ranges closer than a gap are joined, in time order")
    func joinedRanges() {
        let ranges = [
            TimeRange(start: 10, end: 11), TimeRange(start: 0, end: 1), TimeRange(start: 1.5, end: 2.5),
            TimeRange(start: 2, end: 3), TimeRange(start: 6, end: 7)
        ]
        #expect(
            TimeRange.joined(ranges, closerThan: 2) == [
                TimeRange(start: 0, end: 3), TimeRange(start: 6, end: 7), TimeRange(start: 10, end: 11)
            ])
        #expect(TimeRange.joined(ranges, closerThan: 0).count == 4, "only overlapping ones join")
        #expect(TimeRange.joined([], closerThan: 1).isEmpty)
    }

    @Test("moments fails with one line naming the file and the problem")
    func cliFailure() throws {
        try #require(
            FileManager.default.isExecutableFile(atPath: moments.path),
            "build the moments executable first (swift build): \(moments.path)")
        let dir = Scratch()
        let bad = try dir.write("bad.mp4", Data("hello".utf8))
        let result = try run(["probe", bad])
        #expect(result.status != 0)
        let lines = result.err.split(separator: "\n")
        #expect(lines.count == 1)
        #expect(result.err.contains(bad) && result.err.contains("not a video"))
        let source = try dir.video { $0.duration = 2 }
        let render = try run(["render", source, "--segments", "1-5", "-o", dir.path("o.mp4")])
        #expect(render.status != 0 && render.err.contains("outside the video"))
        #expect(!FileManager.default.fileExists(atPath: dir.path("o.mp4")))
    }
}
