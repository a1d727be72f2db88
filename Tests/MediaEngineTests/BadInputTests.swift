import Foundation
import AnalysisDecode
import MediaEngine
import MediaPictures
import MediaSynth
import Testing

/// Every class of bad input gets a typed error naming the file — never a crash, a hang or output.
@Suite("Bad input")
struct BadInputTests {
    @Test("a missing file")
    func missing() {
        let dir = Scratch()
        let path = dir.path("nothing.mp4")
        expectMediaError(.fileNotFound, path: path) { _ = try Probe.probe(path) }
    }

    @Test("a zero-byte file")
    func empty() throws {
        let dir = Scratch()
        let path = try dir.write("empty.mp4", Data())
        expectMediaError(.emptyFile, path: path) { _ = try Probe.probe(path) }
    }

    @Test("random bytes")
    func randomBytes() throws {
        let dir = Scratch()
        var rng = SplitMix(seed: 1)
        let path = try dir.write("random.mp4", Data((0..<200_000).map { _ in UInt8(truncatingIfNeeded: rng.next()) }))
        expectMediaError(.notMedia, path: path) { _ = try Probe.probe(path) }
    }

    @Test("text renamed .mp4")
    func text() throws {
        let dir = Scratch()
        let path = try dir.write("notes.mp4", Data(String(repeating: "This is not a video.\n", count: 500).utf8))
        expectMediaError(.notMedia, path: path) { _ = try Probe.probe(path) }
    }

    @Test("an image renamed .mp4")
    func image() throws {
        let dir = Scratch()
        let video = try dir.video { $0.duration = 1 }
        let jpeg = dir.path("still.jpg")
        try Poster.write(from: video, at: 0.5, to: jpeg)
        let path = dir.path("still.mp4")
        try FileManager.default.moveItem(atPath: jpeg, toPath: path)
        expectMediaError(.notVideo, path: path) { _ = try Probe.probe(path) }
    }

    @Test("audio only")
    func audioOnly() throws {
        let dir = Scratch()
        let path = try dir.write("sound.mp4", wav(seconds: 1))
        expectMediaError(.notVideo, path: path) { _ = try Probe.probe(path) }
        do { _ = try Probe.probe(path) } catch { #expect(error.detail.contains("audio")) }
    }

    @Test("a file cut short: its media data is missing")
    func truncatedData() throws {
        let dir = Scratch()
        let video = try dir.video { $0.duration = 3 }
        let bytes = try Data(contentsOf: URL(fileURLWithPath: video))
        let path = try dir.write("cut.mp4", bytes.prefix(bytes.count / 2))
        expectMediaError(.truncated, path: path) { _ = try Probe.probe(path) }
    }

    @Test("a file whose index (moov) was never written")
    func noIndex() throws {
        let dir = Scratch()
        let video = try dir.video { $0.duration = 2 }
        var bytes = try Data(contentsOf: URL(fileURLWithPath: video))
        guard let moov = box("moov", in: bytes) else { Issue.record("no moov"); return }
        bytes.removeSubrange(moov)
        let path = try dir.write("unfinished.mp4", bytes)
        expectMediaError(.truncated, path: path) { _ = try Probe.probe(path) }
    }

    @Test("a header claiming absurd dimensions is refused before decoding")
    func absurdDimensions() throws {
        let dir = Scratch()
        let video = try dir.video { $0.duration = 1 }
        var bytes = try Data(contentsOf: URL(fileURLWithPath: video))
        guard let stsd = bytes.range(of: Data("stsd".utf8)),
            let avc1 = bytes.range(of: Data("avc1".utf8), in: stsd.upperBound..<bytes.count)
        else { Issue.record("no avc1"); return }
        // VisualSampleEntry: width and height are 16-bit fields 24 and 26 bytes after the type.
        let at = avc1.lowerBound + 28
        bytes.replaceSubrange(at..<(at + 4), with: [0x4E, 0x20, 0x4E, 0x20])  // 20000 x 20000
        let path = try dir.write("huge.mp4", bytes)
        expectMediaError(.dimensionsTooLarge, path: path) { _ = try Probe.probe(path) }
        expectMediaError(.dimensionsTooLarge, path: path) {
            _ = try Renderer.render(
                RenderRequest(source: path, segments: [TimeRange(start: 0, end: 0.5)], output: dir.path("o.mp4")))
        }
        #expect(!dir.contents.contains { $0.hasPrefix("o.mp4") || $0.hasSuffix(".partial") })
    }

    @Test("damaged packets in the middle are skipped and counted; decoding goes on")
    func corruptPackets() throws {
        let dir = Scratch()
        let video = try dir.video {
            $0.duration = 6; $0.keyframeIntervalSeconds = 1
        }
        var bytes = try Data(contentsOf: URL(fileURLWithPath: video))
        guard let mdat = box("mdat", in: bytes) else { Issue.record("no mdat"); return }
        var rng = SplitMix(seed: 9)
        let middle = mdat.lowerBound + (mdat.upperBound - mdat.lowerBound) * 2 / 5
        for i in stride(from: middle, to: middle + 6000, by: 1) { bytes[i] = UInt8(truncatingIfNeeded: rng.next()) }
        let path = try dir.write("damaged.mp4", bytes)
        let (frames, _, summary) = try decodeFrames(path, maxSide: 320)
        #expect(summary.damagedPackets > 0)
        #expect(frames.count > 150)
        #expect((summary.lastFrameTime ?? 0) > 5.9)
        let result = try Renderer.render(
            RenderRequest(source: path, segments: [TimeRange(start: 1, end: 5)], output: dir.path("o.mp4")))
        #expect(abs(result.duration - 4) < 0.04)
    }

    @Test("a range outside the duration", arguments: [(1.0, 9.0), (7.0, 8.0), (-1.0, 1.0), (2.0, 1.0)])
    func rangeOutside(range: (Double, Double)) throws {
        let dir = Scratch()
        let video = try dir.video { $0.duration = 3 }
        let out = dir.path("o.mp4")
        expectMediaError(.invalidRange, path: video) {
            _ = try Renderer.render(
                RenderRequest(source: video, segments: [TimeRange(start: range.0, end: range.1)], output: out))
        }
        #expect(dir.contents == ["source.mp4"])
    }

    /// The byte range of the first top-level box of `type`.
    func box(_ type: String, in data: Data) -> Range<Int>? {
        var at = 0
        while at + 8 <= data.count {
            let size = data[at..<(at + 4)].reduce(0) { $0 << 8 | Int($1) }
            let name = String(decoding: data[(at + 4)..<(at + 8)], as: UTF8.self)
            guard size >= 8 else { return nil }
            if name == type { return at..<min(data.count, at + size) }
            at += size
        }
        return nil
    }

    /// A mono 16-bit PCM WAV file with a tone.
    func wav(seconds: Double) -> Data {
        let rate = 16_000, count = Int(Double(rate) * seconds)
        var d = Data()
        func u32(_ v: Int) { withUnsafeBytes(of: UInt32(v).littleEndian) { d.append(contentsOf: $0) } }
        func u16(_ v: Int) { withUnsafeBytes(of: UInt16(v).littleEndian) { d.append(contentsOf: $0) } }
        d.append(contentsOf: Array("RIFF".utf8)); u32(36 + count * 2); d.append(contentsOf: Array("WAVE".utf8))
        d.append(contentsOf: Array("fmt ".utf8)); u32(16); u16(1); u16(1); u32(rate); u32(rate * 2); u16(2); u16(16)
        d.append(contentsOf: Array("data".utf8)); u32(count * 2)
        for i in 0..<count { u16(Int(UInt16(bitPattern: Int16(sin(Double(i) * 0.2) * 8000)))) }
        return d
    }
}
