import FFmpeg
import Foundation
import AnalysisDecode
import MediaEngine
import MediaPictures
import MediaSynth
import Testing

@Suite("Render")
struct RenderTests {
    let ranges = [TimeRange(start: 0.5, end: 2.0), TimeRange(start: 4.0, end: 5.2), TimeRange(start: 2.7, end: 3.4)]

    @Test("output lasts the sum of the ranges and each segment starts on the source frame at its range start")
    func frameAccurate() throws {
        let dir = Scratch()
        let source = try dir.video {
            $0.duration = 6; $0.cuts = [2, 4]; $0.preset = "veryfast"; $0.keyframeIntervalSeconds = 2
        }
        let out = dir.path("out.mp4")
        let result = try Renderer.render(RenderRequest(source: source, segments: ranges, output: out))
        let expected = ranges.reduce(0) { $0 + $1.duration }
        #expect(abs(result.duration - expected) <= 1.0 / 30)
        let info = try Probe.probe(out)
        #expect(abs(info.duration - expected) <= 1.0 / 30)
        #expect(info.video.codec == "h264" && info.video.pixelFormat == "yuv420p" && !info.video.isVariableFrameRate)
        #expect(
            info.audio.first?.codec == "aac" && info.audio.first?.sampleRate == 48_000
                && info.audio.first?.channels == 2)

        let output = try decodeFrames(out)
        let sourceFrames = try decodeFrames(source).frames
        #expect(output.frames.count == result.frames)
        var first = 0
        for range in ranges {
            let frame = output.frames[first]
            let expectedIndex = Int((range.start * 30).rounded())
            #expect(frame.barcode == expectedIndex, "segment \(range) starts on source frame \(frame.barcode)")
            // The thumbnail matches the source frame at the range start better than its neighbours.
            let distances = (expectedIndex - 2...expectedIndex + 2).map {
                thumbnailDistance(frame.thumbnail, sourceFrames[$0].thumbnail)
            }
            #expect(distances[2] == distances.min())
            let count = Int((range.duration * 30).rounded())
            // Every following frame of the segment is the next source frame.
            let codes = output.frames[first..<(first + count)].map(\.barcode)
            #expect(codes == Array(expectedIndex..<(expectedIndex + count)))
            first += count
        }
    }

    @Test("each flash and its beep stay within one frame of each other")
    func audioVideoSync() throws {
        let dir = Scratch()
        let events = [1.0, 3.5, 6.0, 8.5]
        let source = try dir.video {
            $0.duration = 10; $0.flashes = events; $0.beeps = events; $0.preset = "veryfast"
        }
        let segments = [
            TimeRange(start: 0.5, end: 1.6), TimeRange(start: 5.7, end: 6.6), TimeRange(start: 3.1, end: 4.0),
            TimeRange(start: 8.0, end: 9.0)
        ]
        let out = dir.path("out.mp4")
        _ = try Renderer.render(RenderRequest(source: source, segments: segments, output: out))
        let decoded = try decodeFrames(out)
        let flashes = decoded.frames.filter { $0.meanLuma > 200 }.map(\.time)
        let beeps = onsets(decoded.audio, rate: 16_000)
        #expect(flashes.count == 4)
        #expect(beeps.count == 4)
        for (flash, beep) in zip(flashes, beeps) {
            #expect(abs(flash - beep) <= 1.0 / 30, "flash at \(flash) s, beep at \(beep) s")
        }
    }

    @Test("joins fade the audio: no click at a cut between loud segments")
    func audioFades() throws {
        let dir = Scratch()
        let source = try dir.video {
            $0.duration = 4; $0.beeps = [0]; $0.beepLength = 4
        }
        let out = dir.path("out.mp4")
        _ = try Renderer.render(
            RenderRequest(
                source: source, segments: [TimeRange(start: 0.5, end: 1.503), TimeRange(start: 2.0, end: 3.0)],
                output: out))
        let audio = try decodeFrames(out).audio
        // Around the join (1.0 s) the level dips to near silence instead of jumping.
        let join = 16_000
        let window = audio[(join - 80)..<(join + 80)].map { abs($0) }
        #expect(window.min()! < 0.05)
    }

    @Test("a crossfade blends N frames and shortens the output by the overlap")
    func crossfade() throws {
        let dir = Scratch()
        let source = try dir.video {
            $0.duration = 6; $0.cuts = [3]
        }
        var request = RenderRequest(
            source: source, segments: [TimeRange(start: 0, end: 2), TimeRange(start: 3.5, end: 5.5)],
            output: dir.path("out.mp4"))
        request.crossfade = 0.3
        let result = try Renderer.render(request)
        #expect(abs(result.duration - 3.7) <= 1.0 / 30)
        let frames = try decodeFrames(request.output).frames
        let before = frames[40].meanLuma, after = frames[80].meanLuma
        let middle = frames[55].meanLuma  // halfway through the blend (frames 51..59)
        #expect(abs(before - after) > 20)
        #expect(middle > min(before, after) + 5 && middle < max(before, after) - 5)
    }

    @Test(
        "quality caps the shorter side, keeps the aspect ratio and even sizes, never upscales",
        arguments: [(RenderQuality.low, 852, 480), (.medium, 1280, 720), (.high, 1280, 720)])
    func quality(preset: RenderQuality, width: Int, height: Int) throws {
        let dir = Scratch()
        let source = try dir.video {
            $0.duration = 1; $0.width = 1280; $0.height = 720
        }
        var request = RenderRequest(
            source: source, segments: [TimeRange(start: 0, end: 0.5)], output: dir.path("out.mp4"))
        request.quality = preset
        let result = try Renderer.render(request)
        #expect(result.width == width && result.height == height)
        let info = try Probe.probe(request.output)
        #expect(info.video.codedWidth == width && info.video.codedHeight == height)
    }

    @Test("portrait (rotated) sources keep their rotation and are capped on their shorter side")
    func rotation() throws {
        let dir = Scratch()
        let source = try dir.video {
            $0.duration = 1; $0.width = 1280; $0.height = 720; $0.rotation = 90
        }
        var request = RenderRequest(
            source: source, segments: [TimeRange(start: 0, end: 0.5)], output: dir.path("out.mp4"))
        request.quality = .low
        _ = try Renderer.render(request)
        let info = try Probe.probe(request.output)
        #expect(info.video.rotation == 90)
        #expect(info.video.displayWidth == 480 && info.video.displayHeight == 852)
        let poster = dir.path("poster.jpg")
        try Poster.write(from: request.output, at: 0.2, to: poster)
        let jpeg = try Probe.probe(poster, allowStillImage: true)
        #expect(jpeg.video.codedWidth == 480 && jpeg.video.codedHeight == 852)
    }

    @Test("HDR (10-bit PQ) becomes 8-bit SDR that still looks right")
    func hdrToSDR() throws {
        let dir = Scratch()
        let source = try dir.video {
            $0.duration = 1; $0.hdr = true
        }
        let out = dir.path("out.mp4")
        _ = try Renderer.render(RenderRequest(source: source, segments: [TimeRange(start: 0, end: 0.5)], output: out))
        let info = try Probe.probe(out)
        #expect(info.video.pixelFormat == "yuv420p" && info.video.bitDepth == 8)
        #expect(info.video.colorTransfer == "bt709" && !info.video.isHDR)
        var bands: [Double] = []
        var options = AnalysisOptions()
        options.maxSide = 4096
        try AnalysisDecoder(path: out, options: options).run(onFrame: { f in
            guard f.index == 0 else { return }
            for band in 0..<3 {
                let x = f.width * (2 * band + 1) / 6, y = f.height / 3
                bands.append(Double(f.luma[y * f.lumaStride + x]))
            }
        })
        #expect(bands.count == 3)
        #expect(bands[0] < 30, "black stays black: \(bands)")
        #expect(bands[1] > 140 && bands[1] < 200, "100-nit grey is a light grey: \(bands)")
        #expect(bands[2] > 215, "1000-nit highlight is near white: \(bands)")
    }

    @Test("10-bit SDR is converted to 8-bit without losing the picture")
    func tenBit() throws {
        let dir = Scratch()
        let source = try dir.video {
            $0.duration = 1; $0.tenBit = true
        }
        let out = dir.path("out.mp4")
        _ = try Renderer.render(RenderRequest(source: source, segments: [TimeRange(start: 0.2, end: 0.8)], output: out))
        #expect(try Probe.probe(out).video.bitDepth == 8)
        let frames = try decodeFrames(out).frames
        #expect(frames.map(\.barcode) == Array(6..<24))
    }

    @Test("a source without sound gets a silent AAC track")
    func silentTrack() throws {
        let dir = Scratch()
        let source = try dir.video {
            $0.duration = 2; $0.audio = false
        }
        let out = dir.path("out.mp4")
        _ = try Renderer.render(
            RenderRequest(
                source: source, segments: [TimeRange(start: 0, end: 1), TimeRange(start: 1.5, end: 2)], output: out))
        let info = try Probe.probe(out)
        #expect(info.audio.first?.codec == "aac" && info.audio.first?.channels == 2)
        let decoded = try decodeFrames(out)
        #expect(abs(Double(decoded.audio.count) / 16_000 - 1.5) < 0.05)
        #expect(decoded.audio.allSatisfy { abs($0) < 1e-3 })
    }

    @Test("variable frame rate sources render at a constant rate")
    func variableToConstant() throws {
        let dir = Scratch()
        let source = try dir.video {
            $0.duration = 4; $0.variableFrameRate = true
        }
        let out = dir.path("out.mp4")
        let result = try Renderer.render(
            RenderRequest(source: source, segments: [TimeRange(start: 0.5, end: 3.5)], output: out))
        let info = try Probe.probe(out)
        #expect(!info.video.isVariableFrameRate)
        #expect(abs(info.duration - 3) <= 1 / result.frameRate.value)
        #expect(result.frames == Int((3 * result.frameRate.value).rounded()))
    }

    @Test("progress goes from 0 to 1 and never backwards")
    func progress() throws {
        let dir = Scratch()
        let source = try dir.video { $0.duration = 3 }
        nonisolated(unsafe) var values: [Double] = []
        _ = try Renderer.render(
            RenderRequest(
                source: source, segments: ranges.dropLast().map { TimeRange(start: $0.start / 2, end: $0.end / 2) },
                output: dir.path("o.mp4"))
        ) { values.append($0) }
        #expect(values.first == 0 && values.last == 1)
        #expect(zip(values, values.dropFirst()).allSatisfy { $0 <= $1 })
        #expect(values.count > 10)
    }

    @Test("cancelling mid-render stops within a second and leaves no file behind")
    func cancel() throws {
        let dir = Scratch()
        let source = try dir.video {
            $0.duration = 30; $0.width = 640; $0.height = 360
        }
        let token = CancellationToken()
        nonisolated(unsafe) var cancelledAt: Date?
        do {
            _ = try Renderer.render(
                RenderRequest(source: source, segments: [TimeRange(start: 0, end: 29)], output: dir.path("out.mp4")),
                cancellation: token
            ) { fraction in
                if fraction > 0.2 && cancelledAt == nil { token.cancel(); cancelledAt = Date() }
            }
            Issue.record("expected cancellation")
        } catch {
            #expect(error.kind == .cancelled)
            #expect(Date().timeIntervalSince(cancelledAt ?? .distantPast) < 1)
        }
        #expect(dir.contents == ["source.mp4"])
    }

    /// Times where a loud sound starts after at least 50 ms of quiet (2 ms windows).
    func onsets(_ samples: [Float], rate: Int) -> [Double] {
        let window = rate / 500
        var result: [Double] = []
        var quiet = 0
        for start in stride(from: 0, to: samples.count - window, by: window) {
            let rms = sqrt(samples[start..<(start + window)].reduce(0) { $0 + $1 * $1 } / Float(window))
            if rms > 0.1 {
                if quiet >= 25 { result.append(Double(start) / Double(rate)) }
                quiet = 0
            } else if rms < 0.05 {
                quiet += 1
            }
        }
        return result
    }
}

@Suite("Render from an earlier render")
struct RenderReuseTests {
    @Test(
        "segments an earlier render already holds are copied from it: same frames on the same output frames, only the new one encoded"
    )
    func copiesSharedSegments() throws {
        let dir = Scratch()
        let source = try dir.video {
            $0.duration = 10; $0.cuts = [3, 6]; $0.preset = "veryfast"; $0.keyframeIntervalSeconds = 2
        }
        let first = [TimeRange(start: 0.5, end: 2.0), TimeRange(start: 4.0, end: 5.2), TimeRange(start: 6.5, end: 7.9)]
        let earlier = dir.path("earlier.mp4")
        _ = try Renderer.render(RenderRequest(source: source, segments: first, output: earlier))

        // The first segment is gone (trimmed off), the second starts earlier (12 frames encoded
        // before its 36 copied ones), the third lasts longer (its first 42 frames copied, the 12
        // after them encoded), a new one comes at the end.
        let second = [TimeRange(start: 3.6, end: 5.2), TimeRange(start: 6.5, end: 8.3), TimeRange(start: 8.5, end: 9.4)]
        var request = RenderRequest(source: source, segments: second, output: dir.path("spliced.mp4"))
        request.reuse = RenderReuse(path: earlier, segments: first)
        let spliced = try Renderer.render(request)
        #expect(spliced.copiedFrames == 36 + 42)
        #expect(spliced.frames == 48 + 54 + 27)

        let plain = try Renderer.render(RenderRequest(source: source, segments: second, output: dir.path("plain.mp4")))
        #expect(plain.copiedFrames == 0)
        let a = try decodeFrames(dir.path("spliced.mp4")), b = try decodeFrames(dir.path("plain.mp4"))
        #expect(a.summary.damagedPackets == 0)
        #expect(a.frames.map(\.barcode) == b.frames.map(\.barcode))
        #expect(a.frames.count == 129)
        let expected = (108..<156).map { $0 } + (195..<249).map { $0 } + (255..<282).map { $0 }
        #expect(a.frames.map(\.barcode) == expected)
        #expect(abs(a.audio.count - b.audio.count) <= 16)
        let info = try Probe.probe(dir.path("spliced.mp4"))
        #expect(abs(info.duration - 4.3) <= 1.0 / 30)
    }

    @Test("an earlier render at another size, or a crossfaded one, is not copied from: everything is encoded")
    func refusesOtherSettings() throws {
        let dir = Scratch()
        let source = try dir.video {
            $0.duration = 6; $0.width = 1280; $0.height = 720; $0.preset = "veryfast"
        }
        let segments = [TimeRange(start: 0.5, end: 2.0), TimeRange(start: 3.0, end: 4.0)]
        var small = RenderRequest(source: source, segments: segments, output: dir.path("small.mp4"))
        small.quality = .low
        _ = try Renderer.render(small)
        var request = RenderRequest(source: source, segments: segments, output: dir.path("out.mp4"))
        request.reuse = RenderReuse(path: dir.path("small.mp4"), segments: segments)
        #expect(try Renderer.render(request).copiedFrames == 0)
        request.reuse = RenderReuse(path: dir.path("missing.mp4"), segments: segments)
        #expect(try Renderer.render(request).copiedFrames == 0)
        _ = try Renderer.render(RenderRequest(source: source, segments: segments, output: dir.path("same.mp4")))
        request.reuse = RenderReuse(path: dir.path("same.mp4"), segments: segments)
        request.crossfade = 0.2
        #expect(try Renderer.render(request).copiedFrames == 0)
        request.crossfade = 0
        #expect(try Renderer.render(request).copiedFrames == 75)
        #expect(try decodeFrames(dir.path("out.mp4")).frames.count == 75)
    }

    @Test("two renders of different segments with the same settings have the same parameter sets (SPS/PPS)")
    func sameSettingsSameParameterSets() throws {
        let dir = Scratch()
        let source = try dir.video {
            $0.duration = 10; $0.cuts = [3, 6]; $0.preset = "veryfast"; $0.keyframeIntervalSeconds = 2
        }
        let one = dir.path("one.mp4"), two = dir.path("two.mp4")
        _ = try Renderer.render(
            RenderRequest(source: source, segments: [TimeRange(start: 0.5, end: 2.0)], output: one))
        _ = try Renderer.render(
            RenderRequest(
                source: source, segments: [TimeRange(start: 6.2, end: 9.5), TimeRange(start: 3.1, end: 4.0)],
                output: two))
        let first = try sampleDescription(one), second = try sampleDescription(two)
        #expect(!first.isEmpty)
        #expect(first == second)
    }

    @Test("the encoder's thread count (sized to each machine) leaves the parameter sets alone")
    func threadCountKeepsParameterSets() throws {
        // A re-upload's render copies pieces of a highlight another worker made, perhaps on a
        // machine with another core count: the pieces decode only with the same SPS/PPS.
        let dir = Scratch()
        var descriptions: [[UInt8]] = []
        for threads in [1, 2, 5] {
            var video = VideoEncoding(width: 320, height: 240, frameRate: Rational(30, 1))
            video.preset = "veryfast"
            video.threads = threads
            let path = dir.path("threads-\(threads).mp4")
            let writer = try MediaWriter(path: path, video: video, audio: nil)
            for i in 0..<40 {
                try writer.writePicture { p in
                    for y in 0..<p.height {
                        memset(p.y.advanced(by: y * p.yStride), Int32((y + 3 * i) & 0xFF), p.width)
                    }
                    for y in 0..<(p.height / 2) {
                        memset(p.u.advanced(by: y * p.uStride), 128, p.width / 2)
                        memset(p.v.advanced(by: y * p.vStride), Int32(100 + i), p.width / 2)
                    }
                }
            }
            try writer.finish()
            descriptions.append(try sampleDescription(path))
        }
        #expect(!descriptions[0].isEmpty)
        #expect(descriptions[1] == descriptions[0])
        #expect(descriptions[2] == descriptions[0])
    }

    /// The `avcC` box of an MP4's video track: the extradata, SPS and PPS, its pictures decode with.
    private func sampleDescription(_ path: String) throws -> [UInt8] {
        let bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
        let tag: [UInt8] = Array("avcC".utf8)
        guard let at = (4..<(bytes.count - 4)).first(where: { Array(bytes[$0..<($0 + 4)]) == tag }) else { return [] }
        let size = bytes[(at - 4)..<at].reduce(0) { $0 << 8 | Int($1) }
        return Array(bytes[at..<min(bytes.count, at - 4 + size)])
    }
}
