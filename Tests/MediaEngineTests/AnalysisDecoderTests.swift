import FFmpeg
import Foundation
import AnalysisDecode
import MediaEngine
import MediaPictures
import MediaSynth
import Testing

@Suite("Analysis decode")
struct AnalysisDecoderTests {
    @Test("yields every frame once, in order, at its exact time, with small pictures and 16 kHz audio")
    func complete() throws {
        let dir = Scratch()
        let path = try dir.video {
            $0.duration = 4; $0.width = 640; $0.height = 480; $0.preset = "veryfast"
        }  // with B-frames
        var options = AnalysisOptions()
        options.skipNonReferenceFrames = false
        let decoder = try AnalysisDecoder(path: path, options: options)
        #expect(decoder.width == 256 && decoder.height == 192)
        var times: [Double] = []
        var codes: [Int] = []
        var chunks: [(Double, Int)] = []
        let summary = try decoder.run(
            onFrame: { f in
                times.append(f.time)
                codes.append(Barcode.read(luma: f.luma, width: f.width, height: f.height, stride: f.lumaStride))
                #expect(f.width == 256 && f.height == 192 && f.chromaWidth == 128 && f.chromaHeight == 96)
            },
            onAudio: { chunk in
                chunks.append((chunk.time, chunk.samples.count))
                #expect(chunk.sampleRate == 16_000)
            })
        #expect(times.count == 120)
        for (i, t) in times.enumerated() { #expect(abs(t - Double(i) / 30) < 1e-6) }
        #expect(codes == Array(0..<120))
        #expect(summary.framesAnalysed == 120 && summary.damagedPackets == 0)
        let samples = chunks.reduce(0) { $0 + $1.1 }
        #expect(abs(samples - 64_000) < 1_200)
        // Chunks are contiguous: each starts where the previous ended.
        for i in 1..<chunks.count {
            #expect(abs(chunks[i].0 - (chunks[i - 1].0 + Double(chunks[i - 1].1) / 16_000)) < 0.002)
        }
    }

    @Test("variable frame rate: the times are the source's own")
    func variableFrameRate() throws {
        let dir = Scratch()
        var spec = SynthSpec()
        spec.variableFrameRate = true
        spec.duration = 3
        let path = dir.path("vfr.mp4")
        try Synth.write(spec, to: path)
        var times: [Double] = []
        try AnalysisDecoder(path: path).run(onFrame: { times.append($0.time) })
        #expect(times.count == spec.frameTimes.count)
        for (a, b) in zip(times, spec.frameTimes) { #expect(abs(a - b) < 1e-4) }
    }

    @Test("a lower analysis rate keeps exact times of the frames it keeps")
    func lowerRate() throws {
        let dir = Scratch()
        let path = try dir.video { $0.duration = 4 }
        var options = AnalysisOptions()
        options.skipNonReferenceFrames = false
        options.maxFrameRate = 10
        var times: [Double] = []
        let summary = try AnalysisDecoder(path: path, options: options).run(onFrame: { times.append($0.time) })
        #expect(summary.framesDecoded == 120)
        #expect(times.count == 40)
        for t in times { #expect(abs(t * 30 - (t * 30).rounded()) < 1e-4) }
        for i in 1..<times.count { #expect(abs(times[i] - times[i - 1] - 0.1) < 0.001) }
    }

    @Test("skipping non-reference frames decodes fewer frames, still at exact times")
    func skipNonReference() throws {
        let dir = Scratch()
        let path = try dir.video {
            $0.duration = 4; $0.preset = "veryfast"
        }  // B-frames
        var options = AnalysisOptions()
        options.skipNonReferenceFrames = true
        var times: [Double] = []
        var codes: [Int] = []
        try AnalysisDecoder(path: path, options: options).run(onFrame: { f in
            times.append(f.time)
            codes.append(Barcode.read(luma: f.luma, width: f.width, height: f.height, stride: f.lumaStride))
        })
        #expect(times.count < 100 && times.count > 30)
        for (t, code) in zip(times, codes) { #expect(abs(t * 30 - Double(code)) < 1e-3) }
    }

    @Test("stops within a second of being cancelled")
    func cancel() throws {
        let dir = Scratch()
        let path = try dir.video {
            $0.duration = 40; $0.width = 640; $0.height = 360
        }
        let token = CancellationToken()
        let decoder = try AnalysisDecoder(path: path, cancellation: token)
        var cancelledAt: Date?
        do {
            try decoder.run(onFrame: { f in
                if f.index == 30 { token.cancel(); cancelledAt = Date() }
            })
            Issue.record("expected cancellation")
        } catch {
            #expect(error.kind == .cancelled)
            #expect(Date().timeIntervalSince(cancelledAt ?? .distantPast) < 1)
        }
    }
}
