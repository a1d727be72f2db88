import CFFmpeg
import FFmpeg
import Foundation
import AnalysisDecode
import MediaEngine
import MediaPictures
import MediaSynth
import Testing

/// The storyboard picture: a PNG of the filmstrip, the score curves, the cuts and the chosen
/// segments. The media are synthesised; the PNGs are decoded back with libavcodec.
@Suite("Storyboard")
struct StoryboardTests {
    /// A decoded RGB24 picture.
    struct StoryboardPicture {
        var width: Int
        var height: Int
        var rgb: [UInt8]

        func pixel(_ x: Int, _ y: Int) -> (r: Int, g: Int, b: Int) {
            let i = (y * width + x) * 3
            return (Int(rgb[i]), Int(rgb[i + 1]), Int(rgb[i + 2]))
        }

        func luma(_ x: Int, _ y: Int) -> Int {
            let p = pixel(x, y)
            return (299 * p.r + 587 * p.g + 114 * p.b) / 1000
        }

        /// Mean colour of a rectangle.
        func mean(_ rect: StoryboardRect) -> (r: Double, g: Double, b: Double) {
            var r = 0, g = 0, b = 0
            for y in rect.y..<rect.maxY {
                for x in rect.x..<rect.maxX { let p = pixel(x, y); r += p.r; g += p.g; b += p.b }
            }
            let n = Double(max(1, rect.width * rect.height))
            return (Double(r) / n, Double(g) / n, Double(b) / n)
        }
    }

    enum PNGCheck: Error { case failed(String) }

    /// Decodes PNG bytes with libavcodec's PNG decoder into RGB24.
    static func decodePNG(_ bytes: [UInt8]) throws -> StoryboardPicture {
        guard let codec = avcodec_find_decoder(AV_CODEC_ID_PNG) else { throw PNGCheck.failed("no PNG decoder") }
        var context = avcodec_alloc_context3(codec)
        defer { avcodec_free_context(&context) }
        var packet = av_packet_alloc()
        defer { av_packet_free(&packet) }
        var frame = av_frame_alloc()
        defer { av_frame_free(&frame) }
        guard let context, let packet, let frame, avcodec_open2(context, codec, nil) >= 0,
            av_new_packet(packet, Int32(bytes.count)) >= 0, let data = packet.pointee.data
        else { throw PNGCheck.failed("cannot set up the PNG decoder") }
        bytes.withUnsafeBufferPointer { source in
            if let base = source.baseAddress { data.update(from: base, count: bytes.count) }
        }
        guard avcodec_send_packet(context, packet) >= 0, avcodec_receive_frame(context, frame) >= 0 else {
            throw PNGCheck.failed("the PNG does not decode")
        }
        guard frame.pointee.format == AV_PIX_FMT_RGB24.rawValue, let plane = frame.pointee.data.0 else {
            throw PNGCheck.failed("the PNG is not RGB24 (format \(frame.pointee.format))")
        }
        let width = Int(frame.pointee.width), height = Int(frame.pointee.height), stride = Int(frame.pointee.linesize.0)
        var rgb = [UInt8](repeating: 0, count: width * height * 3)
        for y in 0..<height { for i in 0..<(width * 3) { rgb[y * width * 3 + i] = plane[y * stride + i] } }
        return StoryboardPicture(width: width, height: height, rgb: rgb)
    }

    /// Width and height from the PNG signature and IHDR chunk.
    static func pngHeader(_ bytes: [UInt8]) -> (width: Int, height: Int)? {
        guard bytes.count > 24, Array(bytes[0..<8]) == [137, 80, 78, 71, 13, 10, 26, 10],
            Array(bytes[12..<16]) == Array("IHDR".utf8)
        else { return nil }
        func u32(_ at: Int) -> Int { bytes[at..<(at + 4)].reduce(0) { $0 << 8 | Int($1) } }
        return (u32(16), u32(20))
    }

    /// The frame index a thumbnail shows, from the barcode Synth draws along the bottom of every
    /// frame (read on the picture's luma).
    static func barcode(in picture: StoryboardPicture, _ rect: StoryboardRect) -> Int {
        var luma = [UInt8](repeating: 0, count: rect.width * rect.height)
        for y in 0..<rect.height {
            for x in 0..<rect.width { luma[y * rect.width + x] = UInt8(picture.luma(rect.x + x, rect.y + y)) }
        }
        return luma.withUnsafeBufferPointer {
            Barcode.read(luma: $0, width: rect.width, height: rect.height, stride: rect.width)
        }
    }

    static let curves = [
        StoryboardCurve(label: "motion", color: .motion, values: (0..<6).map { Float($0) / 5 }),
        StoryboardCurve(label: "loudness", color: .loudness, values: [0.9, 0.9, 0.9, 0.1, 0.1, 0.1]),
        StoryboardCurve(label: "quiet", color: (200, 200, 200), values: [0, 0, 0, 0, 0, 0])
    ]

    @Test(
        "a storyboard is a PNG of the given width: thumbnails of the right frames, bands over the segments, lines at the cuts"
    )
    func storyboard() throws {
        let dir = Scratch()
        let source = try dir.video {
            $0.duration = 6; $0.cuts = [3, 4]
        }
        var spec = StoryboardSpec(
            duration: 6, curves: Self.curves, cuts: [3, 4],
            segments: [TimeRange(start: 0.5, end: 2.5), TimeRange(start: 4.5, end: 5.5)])
        spec.width = 1280
        spec.thumbnails = 10
        let bytes = try Storyboard.render(source: source, spec: spec)
        let header = try #require(Self.pngHeader(bytes))
        let layout = Storyboard.layout(for: spec, displayWidth: 320, displayHeight: 240)
        #expect(header.width == 1280 && header.height == layout.height)
        let picture = try Self.decodePNG(bytes)
        #expect(picture.width == 1280 && picture.height == layout.height)

        // Each thumbnail shows a frame of its cell (cells of 0.6 s at 30 fps: frames 18 i ..< 18 (i + 1)),
        // the first one unless a keyframe inside the cell comes first. Cells crossed by a band's
        // edge or a cut line are not read (a line may flip a bar).
        #expect(layout.thumbnails.count == 10)
        var read = 0
        for (i, rect) in layout.thumbnails.enumerated() {
            let range = layout.cellRange(i)
            guard ![0.5, 2.5, 4.5, 5.5, 3, 4].contains(where: { $0 >= range.start - 0.05 && $0 < range.end + 0.05 })
            else { continue }
            let frame = Self.barcode(in: picture, rect)
            #expect((18 * i)..<(18 * (i + 1)) ~= frame, "thumbnail \(i) shows frame \(frame)")
            read += 1
        }
        #expect(read >= 3)
        // Shots have their own colours: the first and the third shot's thumbnails differ.
        let first = picture.mean(layout.thumbnails[0]), last = picture.mean(layout.thumbnails[8])
        #expect(abs(first.r - last.r) + abs(first.g - last.g) + abs(first.b - last.b) > 30)

        // The quiet lane (all zeros): a segment's band tints it, outside it does not.
        let lane = layout.lanes[2]
        let y = lane.y + lane.height * 3 / 4
        let inside = picture.pixel(layout.x(at: 1.5), y), outside = picture.pixel(layout.x(at: 3.5), y)
        #expect(
            inside.r > outside.r + 25 && inside.g > outside.g + 15 && inside.b <= outside.b,
            "band \(inside) vs \(outside)")
        // A cut is a thin line at its time: the column differs from its neighbours.
        let cutX = layout.x(at: 3)
        let line = picture.pixel(cutX, y), left = picture.pixel(cutX - 3, y), right = picture.pixel(cutX + 3, y)
        #expect(line.r > left.r + 80 && line.r > right.r + 80, "cut \(line) vs \(left) \(right)")
        #expect(left == outside || abs(left.r - outside.r) < 4)
        // The loudness lane shows its curve: high at 1.5 s (0.9), low at 5 s (0.1).
        let loud = layout.lanes[1]
        func topOfCurve(_ t: Double) -> Int {
            let x = layout.x(at: t)
            return (loud.y + 2..<loud.maxY).first { picture.pixel(x, $0).r > 200 && picture.pixel(x, $0).b < 120 }
                ?? loud.maxY
        }
        #expect(topOfCurve(1.5) < topOfCurve(5) - loud.height / 2)
    }

    @Test("a portrait video (rotation 90) gives upright, narrower thumbnails")
    func portrait() throws {
        let dir = Scratch()
        let source = try dir.video {
            $0.duration = 2; $0.rotation = 90
        }
        var spec = StoryboardSpec(duration: 2, curves: [], cuts: [], segments: [])
        spec.thumbnails = 4
        spec.width = 640
        let picture = try Self.decodePNG(try Storyboard.render(source: source, spec: spec))
        let layout = Storyboard.layout(for: spec, displayWidth: 240, displayHeight: 320)
        #expect(picture.width == 640 && picture.height == layout.height)
        let rect = layout.thumbnails[0], cell = layout.cells[0]
        #expect(rect.width < rect.height && rect.width < cell.width && rect.height == cell.height / 2 * 2)
        // Beside the thumbnail, the cell's dark grey.
        let side = picture.pixel(cell.x + 1, cell.midY)
        #expect(side.r < 60 && side.g < 60 && side.b < 70)
        // Frame 0 has a white square at stored x 0..32, y 80..112 of 320x240. Turned clockwise it
        // is at the top, just right of the middle; unturned it would be at the left.
        func at(_ fx: Double, _ fy: Double) -> Int {
            picture.luma(rect.x + Int(fx * Double(rect.width)), rect.y + Int(fy * Double(rect.height)))
        }
        #expect(at(0.6, 0.04) > 170, "the square should be at the top")
        #expect(at(0.05, 0.4) < 120, "the picture is not turned")
        // The barcode runs down the left edge (frame 0: all bits off, black).
        #expect(at(0.01, 0.5) < 40)
    }

    @Test("a phone HLG video (HEVC Main10, portrait) gives upright, tone-mapped thumbnails")
    func phoneHDR() throws {
        let dir = Scratch()
        let source = dir.path("phone.mp4")
        let phone = SynthSpec.phone(width: 640, height: 360, frameRate: 30, duration: 1, rotation: 90)
        try Synth.write(phone, to: source)
        var spec = StoryboardSpec(duration: 1, curves: [], cuts: [], segments: [])
        spec.thumbnails = 1
        let picture = try Self.decodePNG(try Storyboard.render(source: source, spec: spec))
        let layout = Storyboard.layout(for: spec, displayWidth: 360, displayHeight: 640)
        let rect = layout.thumbnails[0]
        #expect(rect.width < rect.height)
        // The calibration patches run along the stored top edge from its left corner: turned
        // clockwise, down the right edge from the top. Black stays black, white is near SDR white.
        let side = phone.hlgPatches[0].size
        func level(_ i: Int) -> Int {
            let storedX = Double(i * side + side / 2) / 640, storedY = Double(side / 2) / 360
            return picture.luma(
                rect.x + Int((1 - storedY) * Double(rect.width)), rect.y + Int(storedX * Double(rect.height)))
        }
        let levels = SynthPatch.Level.allCases.indices.map(level)
        #expect(levels[0] < 30, "black \(levels)")
        #expect(levels[0] < levels[1] && levels[1] < levels[2] && levels[2] <= levels[3], "\(levels)")
        #expect(levels[2] > 200, "diffuse white (191 without tone mapping) \(levels)")
    }

    @Test("a hostile spec is clamped: no crash, a PNG of a bounded size")
    func hostileSpec() throws {
        let dir = Scratch()
        let source = try dir.video {
            $0.duration = 2; $0.audio = false
        }
        let wild: [Float] = [.nan, .infinity, -.infinity, 5, -3, 0.5] + [Float](repeating: 0.7, count: 10_000)
        let hostileCurves = [
            StoryboardCurve(label: String(repeating: "éü😀x", count: 500), color: (255, 0, 0), values: wild),
            StoryboardCurve(label: "", color: (0, 0, 0), values: [])
        ]
        let hostileSegments = [
            TimeRange(start: -5, end: 100), TimeRange(start: 3, end: 1), TimeRange(start: .nan, end: 1),
            TimeRange(start: 1, end: .infinity), TimeRange(start: 1e300, end: -1e300)
        ]
        var cases: [StoryboardSpec] = []
        for (duration, width, thumbnails) in [
            (Double.nan, 10, 0), (0, 100_000, 10_000), (-1, Int.max, Int.min),
            (1e300, Int.min, 1), (.infinity, 256, 60), (2, 4096, 60)
        ] {
            var spec = StoryboardSpec(
                duration: duration, curves: hostileCurves, cuts: [.nan, .infinity, -1, 0, 1, 1e300, 2],
                segments: hostileSegments)
            spec.width = width
            spec.thumbnails = thumbnails
            cases.append(spec)
        }
        var many = StoryboardSpec(
            duration: 2, curves: [StoryboardCurve](repeating: hostileCurves[0], count: 1000),
            cuts: [Double](repeating: 1, count: 100_000),
            segments: [TimeRange](repeating: TimeRange(start: 0.5, end: 1), count: 10_000))
        many.thumbnails = 3
        cases.append(many)
        for spec in cases {
            let bytes = try Storyboard.render(source: source, spec: spec, limits: DecodeLimits(maxDecodedSeconds: 600))
            let header = try #require(Self.pngHeader(bytes))
            #expect((256...4096).contains(header.width), "\(spec.width)")
            #expect(header.height > 50 && header.height < 2000, "\(header.height)")
            let picture = try Self.decodePNG(bytes)
            #expect(picture.width == header.width)
        }
    }

    @Test("a cancelled token stops the storyboard with .cancelled; limits hold")
    func cancellationAndLimits() throws {
        let dir = Scratch()
        let source = try dir.video {
            $0.duration = 3; $0.audio = false
        }
        let spec = StoryboardSpec(duration: 3, curves: [], cuts: [], segments: [])
        let token = CancellationToken()
        token.cancel()
        expectMediaError(.cancelled, path: source) {
            _ = try Storyboard.render(source: source, spec: spec, cancellation: token)
        }
        let output = dir.path("board.png")
        expectMediaError(.cancelled, path: source) {
            try Storyboard.write(source: source, spec: spec, to: output, cancellation: token)
        }
        #expect(!FileManager.default.fileExists(atPath: output))
        // Ten thumbnails need at least ten frames.
        expectMediaError(.tooManyFrames, path: source) {
            _ = try Storyboard.render(
                source: source, spec: spec, limits: DecodeLimits(maxDecodedSeconds: 600, maxTotalFrames: 5))
        }
        let missing = dir.path("missing.mp4")
        expectMediaError(.fileNotFound, path: missing) { _ = try Storyboard.render(source: missing, spec: spec) }
    }

    @Test("write puts the PNG in place and leaves no temporary file")
    func write() throws {
        let dir = Scratch()
        let source = try dir.video {
            $0.duration = 2; $0.cuts = [1]
        }
        let output = dir.path("storyboard.png")
        var spec = StoryboardSpec(
            duration: 2, curves: Self.curves, cuts: [1], segments: [TimeRange(start: 0.2, end: 0.8)])
        spec.width = 512
        try Storyboard.write(source: source, spec: spec, to: output)
        let bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: output)))
        #expect(Self.pngHeader(bytes)?.width == 512)
        #expect(dir.contents == ["source.mp4", "storyboard.png"])
    }

    /// Writes the sample storyboard to the path in STORYBOARD_SAMPLE (to look at it); skipped otherwise.
    @Test(
        "sample storyboard of a 20 s video",
        .enabled(if: ProcessInfo.processInfo.environment["STORYBOARD_SAMPLE"] != nil))
    func sample() throws {
        let output = try #require(ProcessInfo.processInfo.environment["STORYBOARD_SAMPLE"])
        let dir = Scratch()
        let kinds: [SynthPart.Kind] = [.dull, .lively, .blurred, .lively, .dull, .lively]
        let starts = [0, 3.2, 7.5, 11, 14.8, 17]
        let source = try dir.video {
            $0.duration = 20
            $0.parts = zip(starts, kinds).enumerated().map { SynthPart(start: $1.0, kind: $1.1, seed: $0 + 1) }
        }
        func series(_ f: (Double) -> Double) -> [Float] { (0..<20).map { Float(min(1, max(0, f(Double($0))))) } }
        let lively: (Double) -> Bool = { t in (3.2..<7.5).contains(t) || (11..<14.8).contains(t) || t >= 17 }
        let curves = [
            StoryboardCurve(
                label: "motion", color: .motion,
                values: series { lively($0) ? 0.7 + 0.2 * sin($0) : 0.1 + 0.05 * cos($0) }),
            // Loudness in dBFS mapped -60...0 to 0...1.
            StoryboardCurve(
                label: "loudness", color: .loudness,
                values: series { t in ((lively(t) ? -12 + 4 * sin(t * 2) : -48) + 60) / 60 }),
            StoryboardCurve(
                label: "quality", color: .quality,
                values: series { t in (7.5..<11).contains(t) ? 0.15 : 0.8 + 0.1 * sin(t) })
        ]
        var spec = StoryboardSpec(
            duration: 20, curves: curves, cuts: Array(starts.dropFirst()),
            segments: [
                TimeRange(start: 4, end: 6.5), TimeRange(start: 11.5, end: 13.5),
                TimeRange(start: 17.2, end: 19.5), TimeRange(start: 1, end: 2)
            ])
        spec.thumbnails = 10
        try Storyboard.write(source: source, spec: spec, to: output)
        #expect(FileManager.default.fileExists(atPath: output))
        // The same shown portrait, and narrow with many thumbnails.
        let portrait = try dir.video("portrait.mp4") {
            $0.duration = 20
            $0.rotation = 90
            $0.parts = zip(starts, kinds).enumerated().map { SynthPart(start: $1.0, kind: $1.1, seed: $0 + 1) }
        }
        let stem = output.hasSuffix(".png") ? String(output.dropLast(4)) : output
        try Storyboard.write(source: portrait, spec: spec, to: stem + "-portrait.png")
        spec.width = 480
        spec.thumbnails = 24
        try Storyboard.write(source: source, spec: spec, to: stem + "-narrow.png")
    }
}
