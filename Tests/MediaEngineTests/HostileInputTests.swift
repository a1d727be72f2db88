import CFFmpeg
@testable import FFmpeg
import Foundation
@testable import AnalysisDecode
@testable import MediaEngine
@testable import MediaPictures
import MediaSynth
import Testing

/// Uploads built to hurt: headers that lie about time to size memory or work, files that make
/// FFmpeg open another account's files, floods of frames. Each ends in a typed error or a bounded
/// success — never a crash, a huge allocation, hours of work or a read of the referenced file.
@Suite("Hostile input")
struct HostileInputTests {
    /// A small valid MP4 (tiny pictures keep every test fast).
    func small(_ dir: Scratch, _ name: String = "source.mp4", seconds: Double = 2, audio: Bool = true) throws -> String
    {
        try dir.video(name) {
            $0.width = 64; $0.height = 48; $0.duration = seconds; $0.audio = audio
        }
    }

    func patched(_ dir: Scratch, from source: String, to name: String, _ edit: (inout MP4Patch) -> Void) throws
        -> String
    {
        var patch = try MP4Patch(contentsOf: source)
        edit(&patch)
        let path = dir.path(name)
        try patch.write(to: path)
        return path
    }

    func analyse(_ path: String, limits: DecodeLimits = DecodeLimits()) throws(MediaError) -> AnalysisSummary {
        var options = AnalysisOptions()
        options.limits = limits
        return try AnalysisDecoder(path: path, options: options).run(onFrame: { _ in })
    }

    /// The process's peak resident memory in bytes (VmHWM).
    static func peakResident() -> Int {
        guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8),
            let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmHWM:") })
        else { return 0 }
        return (Int(line.split(separator: " ").dropFirst().first ?? "0") ?? 0) * 1024
    }

    // MARK: Headers that lie

    @Test("a 2,000,000,000 timescale with one-tick frames: bounded, no header-sized allocation")
    func billionTickTimescale() throws {
        let dir = Scratch()
        let source = try small(dir)
        let path = try patched(dir, from: source, to: "ticks.mp4") {
            $0.retimeVideo(timescale: 2_000_000_000, sampleDelta: 1)
        }
        let info = try Probe.probe(path)
        #expect(info.video.frameRate > 1_000_000)  // the header's claim, reported as is
        do {
            let summary = try analyse(path)
            #expect(summary.framesDecoded <= 240)
        } catch {
            #expect([MediaError.Kind.tooManyFrames, .badTimestamps].contains(error.kind), "\(error)")
        }
        // Long enough (in frames) that 240 frames per second of footage is exceeded: a clear failure.
        let longer = try patched(dir, from: try small(dir, "long.mp4", seconds: 10, audio: false), to: "ticks-long.mp4")
        {
            $0.retimeVideo(timescale: 2_000_000_000, sampleDelta: 1)
        }
        expectMediaError(.tooManyFrames, path: longer) { _ = try analyse(longer) }
        // The renderer's work is bounded the same way (its loop follows timestamps that never advance).
        let output = dir.path("o.mp4")
        expectMediaError(.tooManyFrames, path: longer) {
            _ = try Renderer.render(
                RenderRequest(source: longer, segments: [TimeRange(start: 0, end: 1)], output: output))
        }
        #expect(!FileManager.default.fileExists(atPath: output))
        #expect(Self.peakResident() < 2 << 30)
    }

    @Test("a header claiming 1 s on a longer video: the decoded length is what counts")
    func headerClaimsShort() throws {
        let dir = Scratch()
        let source = try small(dir, seconds: 6)
        let path = try patched(dir, from: source, to: "short.mp4") { $0.claimDuration(1) }
        #expect(try Probe.probe(path).duration < 2)
        expectMediaError(.tooLong, path: path) { _ = try analyse(path, limits: DecodeLimits(maxDecodedSeconds: 3)) }
        do {
            _ = try analyse(path, limits: DecodeLimits(maxDecodedSeconds: 3))
        } catch {
            #expect(error.detail.contains("3 s"), "the limit is named: \(error.detail)")
        }
        let summary = try analyse(path, limits: DecodeLimits(maxDecodedSeconds: 10))
        #expect((summary.lastFrameTime ?? 0) > 5.5)
        // Rendering past the limit is refused before any work.
        var request = RenderRequest(source: path, segments: [TimeRange(start: 4, end: 5)], output: dir.path("o.mp4"))
        request.limits = DecodeLimits(maxDecodedSeconds: 3)
        expectMediaError(.tooLong, path: path) { _ = try Renderer.render(request) }
        #expect(!dir.contents.contains("o.mp4"))
    }

    @Test("many frames in almost no time (one-tick frames): a clear failure, fast")
    func frameFlood() throws {
        let dir = Scratch()
        let source = try small(dir, seconds: 10, audio: false)  // 300 frames, all within 20 ms once patched
        let path = try patched(dir, from: source, to: "flood.mp4") { $0.retimeVideo(sampleDelta: 1) }
        let started = Date()
        expectMediaError(.tooManyFrames, path: path) { _ = try analyse(path) }
        #expect(Date().timeIntervalSince(started) < 10)
    }

    @Test("a timestamp jump of minutes between two frames")
    func timestampJump() throws {
        let dir = Scratch()
        let source = try small(dir, seconds: 1, audio: false)
        var scale: UInt32 = 0
        let path = try patched(dir, from: source, to: "jump.mp4") { patch in
            let trak = patch.tracks("vide")[0]
            scale = patch.timescale(of: patch.find(["mdia", "mdhd"], in: trak)!)
            patch.retimeVideo(sampleDelta: scale * 100)  // 100 s per frame
        }
        #expect(scale > 0)
        expectMediaError(.badTimestamps, path: path) { _ = try analyse(path) }
        // Under a 60 s cap the first late frame is simply too late.
        expectMediaError(.tooLong, path: path) {
            _ = try analyse(path, limits: DecodeLimits(maxDecodedSeconds: 60, maxTimestampJump: 1_000))
        }
    }

    @Test("a frame-rate and a frame-count limit apply to honest files too")
    func honestLimits() throws {
        let dir = Scratch()
        let path = try small(dir, seconds: 2, audio: false)  // 60 frames at 30 fps
        #expect(try analyse(path).framesDecoded == 60)
        expectMediaError(.tooManyFrames, path: path) {
            _ = try analyse(path, limits: DecodeLimits(maxDecodedSeconds: 100, maxFramesPerSecond: 10))
        }
        expectMediaError(.tooManyFrames, path: path) {
            _ = try analyse(path, limits: DecodeLimits(maxDecodedSeconds: 100, maxTotalFrames: 30))
        }
    }

    // MARK: Files that point at other files

    /// A file with a distinctive size another upload might try to read.
    func victim(_ dir: Scratch) throws -> String {
        let victim = try small(dir, "victim.mp4")
        return victim
    }

    func expectRefused(_ path: String, dir: Scratch, sourceLocation: SourceLocation = #_sourceLocation) {
        expectMediaError(.unsupportedContainer, path: path, sourceLocation: sourceLocation) {
            _ = try Probe.probe(path)
        }
        expectMediaError(.unsupportedContainer, path: path, sourceLocation: sourceLocation) {
            _ = try AnalysisDecoder(path: path)
        }
        let output = dir.path("out-\(UUID().uuidString).mp4")
        expectMediaError(.unsupportedContainer, path: path, sourceLocation: sourceLocation) {
            _ = try Renderer.render(
                RenderRequest(source: path, segments: [TimeRange(start: 0, end: 1)], output: output))
        }
        expectMediaError(.unsupportedContainer, path: path, sourceLocation: sourceLocation) {
            try Poster.write(from: path, at: 0.5, to: dir.path("poster.jpg"))
        }
        #expect(!FileManager.default.fileExists(atPath: output), sourceLocation: sourceLocation)
        do { _ = try Probe.probe(path) } catch {
            #expect(
                !error.detail.contains("victim") && !error.detail.contains(dir.url.path),
                "no path in the user's message",
                sourceLocation: sourceLocation)
        }
    }

    @Test("an HLS playlist naming another job's video is refused")
    func hlsPlaylist() throws {
        let dir = Scratch()
        let victim = try victim(dir)
        let playlist = """
            #EXTM3U
            #EXT-X-VERSION:3
            #EXT-X-TARGETDURATION:2
            #EXT-X-MEDIA-SEQUENCE:0
            #EXTINF:2.0,
            file://\(victim)
            #EXTINF:2.0,
            \(victim)
            #EXT-X-ENDLIST

            """
        expectRefused(try dir.write("upload.mp4", Data(playlist.utf8)), dir: dir)
    }

    @Test("a DASH manifest naming another job's video is refused")
    func dashManifest() throws {
        let dir = Scratch()
        let victim = try victim(dir)
        let manifest = """
            <?xml version="1.0" encoding="utf-8"?>
            <MPD xmlns="urn:mpeg:dash:schema:mpd:2011" type="static" mediaPresentationDuration="PT2S" minBufferTime="PT1S" profiles="urn:mpeg:dash:profile:isoff-on-demand:2011">
             <Period><AdaptationSet mimeType="video/mp4"><Representation id="1" bandwidth="100000" width="64" height="48" codecs="avc1.42c00a">
              <BaseURL>file://\(victim)</BaseURL><SegmentBase indexRange="0-100"/></Representation></AdaptationSet></Period>
            </MPD>

            """
        let path = try dir.write("upload.mp4", Data(manifest.utf8))
        if av_find_input_format("dash") != nil {
            expectRefused(path, dir: dir)
        } else {
            // This FFmpeg has no DASH demuxer: the manifest is just XML, not media.
            expectMediaError(.notMedia, path: path) { _ = try Probe.probe(path) }
        }
    }

    @Test("an ffconcat list naming another job's video is refused")
    func concatList() throws {
        let dir = Scratch()
        let victim = try victim(dir)
        let list = "ffconcat version 1.0\nfile '\(victim)'\nfile 'file:\(victim)'\n"
        expectRefused(try dir.write("upload.mp4", Data(list.utf8)), dir: dir)
    }

    @Test("even a demuxer forced past the whitelist cannot open a second file")
    func nestedOpenRefused() throws {
        let dir = Scratch()
        let victim = try victim(dir)
        let lists: [(String, String)] = [
            ("concat", "ffconcat version 1.0\nfile '\(victim)'\n"),
            ("hls", "#EXTM3U\n#EXT-X-TARGETDURATION:2\n#EXTINF:2.0,\n\(victim)\n#EXT-X-ENDLIST\n")
        ]
        for (demuxer, text) in lists {
            guard let format = av_find_input_format(demuxer) else { continue }
            let source = InputSource(bytes: Array(text.utf8), name: "upload")
            var packets = 0
            do {
                let input = try FormatInput(source: source, format: format, whitelist: demuxer)
                try? input.findStreamInfo()
                let packet = try Packet()
                while packets < 1_000, (try? input.read(into: packet)) == true { packets += 1; packet.unref() }
            } catch {
                // Refusing at open is as good.
            }
            #expect(packets == 0, "\(demuxer) read \(packets) packets of another file")
        }
    }

    @Test("an image-sequence pattern in a name is a literal file name")
    func imagePattern() throws {
        let dir = Scratch()
        let video = try small(dir, "v%d.mp4")
        let still = dir.path("v1.mp4")
        try Poster.write(from: video, at: 0.5, to: still)  // what an image2 pattern would have read
        let info = try Probe.probe(video)
        #expect(info.container == "mov,mp4,m4a,3gp,3g2,mj2")
        let missing = dir.path("img%03d.jpg")
        try Poster.write(from: video, at: 0.5, to: dir.path("img001.jpg"))
        expectMediaError(.fileNotFound, path: missing) { _ = try Probe.probe(missing) }
    }

    @Test("the formats catalogue lists exactly the accepted containers")
    func catalogue() {
        let names = FormatCatalog.current().containers.map(\.name)
        #expect(Set(names).isSubset(of: Set(ContainerPolicy.demuxers)))
        #expect(
            names.contains("mov,mp4,m4a,3gp,3g2,mj2") && names.contains("matroska,webm") && names.contains("mpegts"))
        #expect(!names.contains { ["hls", "dash", "concat", "image2", "applehttp"].contains($0) })
    }

    @Test(
        "the accepted containers open and decode through the safe path",
        arguments: [
            ("matroska", "mkv", "matroska,webm"), ("mpegts", "ts", "mpegts"), ("flv", "flv", "flv"),
            ("asf", "wmv", "asf")
        ])  // (MPEG-PS and AVI would need the H.264 converted to Annex B, which a plain remux does not do)
    func acceptedContainers(muxer: String, ext: String, demuxer: String) throws {
        let dir = Scratch()
        let source = try small(dir, audio: false)
        let path = dir.path("copy.\(ext)")
        try Remuxer.remux(source, to: path, container: muxer)
        let info = try Probe.probe(path)
        #expect(info.container == demuxer)
        #expect(try analyse(path).framesDecoded >= 55)
    }

    @Test("bytes in memory go through the same safe open")
    func memorySource() throws {
        let dir = Scratch()
        let path = try small(dir)
        let bytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: path)))
        let input = try Probe.open(InputSource(bytes: bytes, name: "memory"), cancellation: nil)
        let info = try Probe.describe(input, fileSize: Int64(bytes.count))
        #expect(info.video.codedWidth == 64)
    }
}
