import FFmpeg
import Foundation
import AnalysisDecode
import MediaEngine
import MediaPictures
import MediaSynth
import Testing

/// A temporary directory removed when the value is released.
final class Scratch {
    let url: URL

    init() {
        url = FileManager.default.temporaryDirectory.appendingPathComponent("moments-tests-\(UUID().uuidString)")
        try? FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    }

    deinit { try? FileManager.default.removeItem(at: url) }

    func path(_ name: String) -> String { url.appendingPathComponent(name).path }

    /// Synthesises `spec` into this directory.
    func video(_ name: String = "source.mp4", _ configure: (inout SynthSpec) -> Void = { _ in }) throws -> String {
        var spec = SynthSpec()
        configure(&spec)
        let path = path(name)
        try Synth.write(spec, to: path)
        return path
    }

    func write(_ name: String, _ data: Data) throws -> String {
        let path = path(name)
        try data.write(to: URL(fileURLWithPath: path))
        return path
    }

    /// Files left in the directory, hidden ones included.
    var contents: [String] { (try? FileManager.default.contentsOfDirectory(atPath: url.path))?.sorted() ?? [] }
}

/// Every analysed frame of a file: time, barcode, mean luma (above the barcode) and a tiny thumbnail.
struct DecodedFrame {
    var time: Double
    var barcode: Int
    var meanLuma: Double
    var thumbnail: [UInt8]
}

func decodeFrames(_ path: String, maxSide: Int = 4096) throws -> (
    frames: [DecodedFrame], audio: [Float], summary: AnalysisSummary
) {
    var options = AnalysisOptions()
    options.maxSide = maxSide
    options.skipLoopFilter = false
    options.skipNonReferenceFrames = false  // every frame: the tests count them
    let decoder = try AnalysisDecoder(path: path, options: options)
    var frames: [DecodedFrame] = []
    var audio: [Float] = []
    let summary = try decoder.run(
        onFrame: { f in
            let code = Barcode.read(luma: f.luma, width: f.width, height: f.height, stride: f.lumaStride)
            let top = f.height - max(8, f.height / 12)
            var sum = 0
            for y in 0..<top { for x in 0..<f.width { sum += Int(f.luma[y * f.lumaStride + x]) } }
            frames.append(
                DecodedFrame(
                    time: f.time, barcode: code, meanLuma: Double(sum) / Double(top * f.width),
                    thumbnail: thumbnail(f.luma, width: f.width, height: top, stride: f.lumaStride)))
        }, onAudio: { chunk in audio.append(contentsOf: chunk.samples) })
    return (frames, audio, summary)
}

/// An 8x6 block-average thumbnail of a luma plane.
func thumbnail(_ luma: UnsafeBufferPointer<UInt8>, width: Int, height: Int, stride: Int) -> [UInt8] {
    var cells = [UInt8]()
    for by in 0..<6 {
        for bx in 0..<8 {
            var sum = 0, n = 0
            for y in (by * height / 6)..<((by + 1) * height / 6) {
                for x in (bx * width / 8)..<((bx + 1) * width / 8) { sum += Int(luma[y * stride + x]); n += 1 }
            }
            cells.append(UInt8(sum / max(n, 1)))
        }
    }
    return cells
}

func thumbnailDistance(_ a: [UInt8], _ b: [UInt8]) -> Double {
    zip(a, b).reduce(0.0) { $0 + abs(Double($1.0) - Double($1.1)) } / Double(a.count)
}

/// Asserts that `body` throws a MediaError of `kind` whose message names the file.
func expectMediaError(
    _ kind: MediaError.Kind, path: String, sourceLocation: SourceLocation = #_sourceLocation,
    _ body: () throws -> Void
) {
    do {
        try body()
        Issue.record("expected \(kind), got success", sourceLocation: sourceLocation)
    } catch let error as MediaError {
        #expect(error.kind == kind, "\(error)", sourceLocation: sourceLocation)
        #expect(
            error.description.contains(path), "message should name the file: \(error)", sourceLocation: sourceLocation)
        #expect(!error.detail.isEmpty, sourceLocation: sourceLocation)
    } catch {
        Issue.record("unexpected error \(error)", sourceLocation: sourceLocation)
    }
}
