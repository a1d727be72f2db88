import FFmpeg
import Foundation
import MediaEngine

/// Writes and draws the videos a `SynthSpec` describes.
public enum Synth {
    /// Writes the video described by `spec` to `path`: a copy of the one made before for the same
    /// spec when `MOMENTS_SYNTH_CACHE` names a folder (`SynthCache`), else encoded now.
    public static func write(_ spec: SynthSpec, to path: String) throws(MediaError) {
        guard let cache = SynthCache.fromEnvironment() else { return try encode(spec, to: path) }
        try cache.write(spec, to: path, encode: encode)
    }

    /// Encodes the video described by `spec` to `path`.
    static func encode(_ spec: SynthSpec, to path: String) throws(MediaError) {
        var video = VideoEncoding(width: spec.width, height: spec.height, frameRate: spec.frameRate)
        video.preset = spec.preset
        video.crf = spec.crf
        video.keyframeIntervalSeconds = spec.keyframeIntervalSeconds
        video.rotation = spec.rotation
        video.tenBit = spec.hdr || spec.tenBit
        video.codec = spec.codec
        video.fixedGOPWithoutBFrames = spec.fixedGOPWithoutBFrames
        video.fixedBFrames = spec.fixedBFrames
        if !spec.keyframeTimes.isEmpty {
            // No keyframe of the encoder's own: only the forced ones.
            video.fixedGOPWithoutBFrames = true
            video.fixedBFrames = 0
            video.keyframeIntervalSeconds = spec.duration + 1
        }
        video.hdrStaticMetadata = spec.hdrStaticMetadata
        switch spec.hdrTransfer {
        case .pq: video.color = .hdr10
        case .hlg: video.color = .hlg
        case nil: break
        }
        if spec.variableFrameRate { video.timeBase = Rational(1, 90_000) }
        let writer = try MediaWriter(path: path, video: video, audio: spec.audio ? AudioEncoding() : nil)

        let times = spec.frameTimes
        let rows = RowBuffers(width: spec.width, bitDepth: video.tenBit ? 10 : 8)
        let sampleRate = 48_000
        var samplesWritten = 0
        var audio = [Float]()
        var noise = SplitMix(seed: 7)
        for (index, time) in times.enumerated() {
            let pts: Int64 = spec.variableFrameRate ? Int64((time * 90_000).rounded()) : Int64(index)
            let keyframe = spec.keyframeTimes.contains { abs($0 - time) < 0.5 / spec.frameRate.value }
            try writer.writePicture(pts: pts, keyframe: keyframe) { planes in
                draw(spec, frame: index, time: time, into: planes, rows: rows)
            }
            guard spec.audio else { continue }
            let next = index + 1 < times.count ? times[index + 1] : spec.duration
            let until = Int((next * Double(sampleRate)).rounded())
            let count = until - samplesWritten
            guard count > 0 else { continue }
            audio.removeAll(keepingCapacity: true)
            for n in samplesWritten..<until {
                let t = Double(n) / Double(sampleRate)
                var value = Float(noise.nextUnit() - 0.5) * 0.004
                if let (part, local) = spec.part(at: t) { value = part.sample(at: local, noise: &noise) }
                if spec.beeps.contains(where: { t >= $0 && t < $0 + spec.beepLength }) {
                    value += Float(sin(2 * Double.pi * 1000 * t) * 0.5)
                }
                audio.append(value)
                audio.append(value)
            }
            try audio.withUnsafeBufferPointer { (buffer) throws(MediaError) in
                try writer.writeAudio(interleaved: buffer)
            }
            samplesWritten = until
        }
        try writer.finish()
    }

    /// Draws one frame: a shot-coloured gradient, a square moving 4 px per frame, the barcode.
    static func draw(_ spec: SynthSpec, frame: Int, time: Double, into p: PicturePlanes, rows: RowBuffers) {
        let shot = spec.shot(at: time)
        let flash = spec.flashes.contains {
            time >= $0 - 1e-6 && time < $0 + Double(spec.flashFrames) / spec.frameRate.value - 1e-6
        }
        if spec.part(at: time) == nil && spec.hdrTransfer != .pq {
            drawShot(spec, frame: frame, shot: shot, flash: flash, into: p, rows: rows)
            return
        }
        let maxCode = p.bitDepth == 10 ? 1023 : 255
        let scale = p.bitDepth == 10 ? 4 : 1
        func put(_ base: UnsafeMutableRawPointer, _ stride: Int, _ x: Int, _ y: Int, _ value: Int) {
            let v = min(max(value, 0), maxCode)
            if p.bitDepth == 10 {
                base.advanced(by: y * stride).assumingMemoryBound(to: UInt16.self)[x] = UInt16(v)
            } else {
                base.advanced(by: y * stride).assumingMemoryBound(to: UInt8.self)[x] = UInt8(v)
            }
        }
        let barHeight = spec.barcode ? max(8, p.height / 12) : 0
        if let (part, local) = spec.part(at: time) {
            drawPart(part, local: local, into: p, rows: p.height - barHeight, put: put, scale: scale)
        } else if spec.hdr {
            // Bands of known brightness: black, 100 nits (diffuse grey), 1000 nits (highlight).
            let codes = [pqCode(nits: 0), pqCode(nits: 100), pqCode(nits: 1000)]
            for y in 0..<(p.height - barHeight) {
                for x in 0..<p.width { put(p.y, p.yStride, x, y, codes[min(2, x * 3 / p.width)]) }
            }
        } else {
            let baseLuma = flash ? 235 : 40 + (shot * 53) % 150
            let square = 32, sx = Synth.bounce(Double(frame * 4), span: p.width - square), sy = p.height / 3
            for y in 0..<(p.height - barHeight) {
                for x in 0..<p.width {
                    var luma = baseLuma
                    if !flash {
                        luma += ((x + y + frame * 2) % 64) / 4  // a moving diagonal texture
                        if x >= sx && x < sx + square && y >= sy && y < sy + square { luma = 220 }
                    }
                    put(p.y, p.yStride, x, y, luma * scale)
                }
            }
        }
        if spec.barcode { drawBarcode(frame, into: p, top: p.height - barHeight, put: put, scale: scale) }
        if let (part, _) = spec.part(at: time) {
            let u = part.kind == .black ? 128 : 128 + ((part.seed * 37) % 96) - 48
            let v = part.kind == .black ? 128 : 128 - ((part.seed * 61) % 96) + 48
            for y in 0..<(p.height / 2) {
                for x in 0..<(p.width / 2) {
                    let wave = part.kind == .black ? 0 : Int(12 * sin(Double(x + y) / Double(5 + part.seed % 7)))
                    put(p.u, p.uStride, x, y, (u + wave) * scale)
                    put(p.v, p.vStride, x, y, (v - wave) * scale)
                }
            }
            return
        }
        let u = flash ? 128 : 128 + ((shot * 37) % 96) - 48
        let v = flash ? 128 : 128 - ((shot * 61) % 96) + 48
        for y in 0..<(p.height / 2) {
            for x in 0..<(p.width / 2) {
                put(p.u, p.uStride, x, y, (spec.hdr ? 128 : u) * scale)
                put(p.v, p.vStride, x, y, (spec.hdr ? 128 : v) * scale)
            }
        }
    }

    /// The shot picture of `draw`, written a row at a time (fast enough for 4K in a debug build):
    /// the shot's level plus a diagonal texture moving 2 px per frame, a 32 px square moving 4 px
    /// per frame, HLG calibration patches, the barcode. 10-bit codes are the 8-bit ones times 4
    /// (in HLG, a flash is the 1000 cd/m² peak and the shots sit in the SDR-like range below
    /// diffuse white).
    static func drawShot(_ spec: SynthSpec, frame: Int, shot: Int, flash: Bool, into p: PicturePlanes, rows: RowBuffers)
    {
        let scale = p.bitDepth == 10 ? 4 : 1
        let barHeight = spec.barcode ? max(8, p.height / 12) : 0
        let top = p.height - barHeight
        let baseLuma = flash ? 235 : 40 + (shot * 53) % 150
        // pattern[i] = base + (i % 64) / 4; row y shows pattern[(y + 2 frame) % 64 ...].
        for i in 0..<(p.width + 64) { rows.pattern.set(i, (baseLuma + (flash ? 0 : (i % 64) / 4)) * scale) }
        let patches = spec.hdrTransfer == .hlg && !flash ? spec.hlgPatches : []
        let patchRows = patches.first.map { min($0.size, top) } ?? 0
        let patchColumns = min(p.width, patches.reduce(0) { max($0, $1.x + $1.size) })
        for patch in patches {
            for x in patch.x..<min(p.width, patch.x + patch.size) { rows.patch.set(x, patch.level.code) }
        }
        let square = 32, sx = Synth.bounce(Double(frame * 4), span: p.width - square), sy = p.height / 3
        for y in 0..<top {
            let row = p.y + y * p.yStride
            rows.pattern.copy(to: row, from: flash ? 0 : (y + frame * 2) % 64, count: p.width)
            if y < patchRows { rows.patch.copy(to: row, from: 0, count: patchColumns) }
            if !flash && y >= sy && y < sy + square {
                for x in sx..<min(p.width, sx + square) { rows.set(row, x, 220 * scale) }
            }
        }
        if spec.barcode {
            let cell = p.width / Barcode.bits
            for bit in 0..<Barcode.bits {
                let on = (frame >> (Barcode.bits - 1 - bit)) & 1 == 1
                for x in (bit * cell)..<min(p.width, (bit + 1) * cell) { rows.pattern.set(x, (on ? 235 : 16) * scale) }
            }
            for x in min(p.width, Barcode.bits * cell)..<p.width { rows.pattern.set(x, 16 * scale) }
            for y in top..<p.height { rows.pattern.copy(to: p.y + y * p.yStride, from: 0, count: p.width) }
        }
        let hdr = spec.hdrTransfer != nil
        let u = flash || hdr ? 128 : 128 + ((shot * 37) % 96) - 48
        let v = flash || hdr ? 128 : 128 - ((shot * 61) % 96) + 48
        let chromaWidth = p.width / 2
        for (plane, stride, value) in [(p.u, p.uStride, u), (p.v, p.vStride, v)] {
            for x in 0..<chromaWidth { rows.chroma.set(x, value * scale) }
            for y in 0..<(p.height / 2) {
                rows.chroma.copy(to: plane + y * stride, from: 0, count: chromaWidth)
            }
        }
    }

    /// A part's picture: a seeded texture of sinusoids; lively parts move it and a large object fast.
    static func drawPart(
        _ part: SynthPart, local: Double, into p: PicturePlanes, rows: Int,
        put: (UnsafeMutableRawPointer, Int, Int, Int, Int) -> Void, scale: Int
    ) {
        if part.kind == .black {
            for y in 0..<rows { for x in 0..<p.width { put(p.y, p.yStride, x, y, 16 * scale) } }
            return
        }
        let seed = Double(part.seed)
        let fx = 0.05 + 0.013 * seed.truncatingRemainder(dividingBy: 5),
            fy = 0.07 + 0.011 * seed.truncatingRemainder(dividingBy: 4)
        let moving = part.kind == .lively || part.kind == .blurred
        let shift = moving ? local * 40 : (part.kind == .dull ? local * 3 : 0)  // texture drift, px/s
        let posed = part.kind == .posed
        // A lively object crosses the picture at 220 px/s and, as it leaves one side, comes back
        // in at the other (drawn in two parts across the edge): it never jumps inside the picture
        // (that is what the shot detector reports as a jump cut) and never vanishes.
        let objectX =
            moving
            ? Int((local * 220).truncatingRemainder(dividingBy: Double(max(1, p.width))))
            : posed
                ? Int(part.subjectX * Double(max(1, p.width - 60))) + Int(4 * sin(local * 2 * Double.pi)) : p.width / 3
        let objectY = moving ? p.height / 4 + Int(30 * sin(local * 5)) : posed ? p.height / 3 : p.height / 4
        let blurred = part.kind == .blurred
        // Per-frame tables of the separable terms, then one row at a time (4K-friendly in debug builds).
        let columns = (0..<p.width).map { x -> Double in
            let X = Double(x) + shift
            return blurred ? 20 * sin(X * 0.02 + seed) : 45 * sin(X * fx + seed)
        }
        let checkerColumns = (0..<p.width).map { x in Int(Double(x) + shift) / 6 }
        let diagonal =
            blurred ? [] : (0..<(p.width + rows)).map { i in 30 * sin((Double(i) + shift) * 0.21 + seed * 0.7) }
        let row = UnsafeMutablePointer<Double>.allocate(capacity: p.width)
        defer { row.deallocate() }
        for y in 0..<rows {
            let Y = Double(y)
            let lineStart = p.y + y * p.yStride
            if blurred {
                let vertical = 110 + 15 * cos(Y * 0.025)
                for x in 0..<p.width { put(lineStart, 0, x, 0, Int(vertical + columns[x]) * scale) }
                continue
            }
            let vertical = cos(Y * fy), band = y / 6
            for x in 0..<p.width {
                row[x] =
                    110 + columns[x] * vertical + diagonal[x + y] + ((checkerColumns[x] + band) % 2 == 0 ? 20 : -20)
            }
            if y >= objectY && y < objectY + 60 {
                for left in moving ? [objectX, objectX - p.width] : [objectX] {
                    let x0 = max(0, left), x1 = min(p.width, left + 60)
                    if x0 < x1 { for x in x0..<x1 { row[x] = (x / 4 + y / 4) % 2 == 0 ? 235 : 40 } }
                }
            }
            for x in 0..<p.width { put(lineStart, 0, x, 0, Int(row[x]) * scale) }
        }
    }

    /// A position `travel` pixels along a back-and-forth path over `span` pixels: moving things
    /// turn at the picture's edge instead of jumping back to the other side (a jump is what the
    /// shot detector reports as a jump cut).
    static func bounce(_ travel: Double, span: Int) -> Int {
        let span = Double(max(1, span))
        let t = travel.truncatingRemainder(dividingBy: 2 * span)
        return Int(t < span ? t : 2 * span - t)
    }

    static func drawBarcode(
        _ value: Int, into p: PicturePlanes, top: Int,
        put: (UnsafeMutableRawPointer, Int, Int, Int, Int) -> Void, scale: Int
    ) {
        let cell = p.width / Barcode.bits
        for bit in 0..<Barcode.bits {
            let on = (value >> (Barcode.bits - 1 - bit)) & 1 == 1
            for y in top..<p.height {
                for x in (bit * cell)..<min(p.width, (bit + 1) * cell) {
                    put(p.y, p.yStride, x, y, (on ? 235 : 16) * scale)
                }
            }
        }
    }

    /// 10-bit limited-range code of a PQ (ST 2084) signal at `nits`.
    public static func pqCode(nits: Double) -> Int {
        let m1 = 0.1593017578125, m2 = 78.84375, c1 = 0.8359375, c2 = 18.8515625, c3 = 18.6875
        let y = pow(max(nits, 0) / 10_000, m1)
        let e = pow((c1 + c2 * y) / (1 + c3 * y), m2)
        return Int((64 + e * 876).rounded())
    }
}

/// Rows of samples (UInt8 for 8-bit, UInt16 for 10-bit video) built once and copied into many
/// picture rows.
final class RowBuffers: @unchecked Sendable {
    final class Row {
        let bytesPerSample: Int
        let storage: UnsafeMutableRawPointer
        init(count: Int, bytesPerSample: Int) {
            self.bytesPerSample = bytesPerSample
            storage = .allocate(byteCount: count * bytesPerSample, alignment: 16)
            storage.initializeMemory(as: UInt8.self, repeating: 0, count: count * bytesPerSample)
        }
        deinit { storage.deallocate() }
        func set(_ i: Int, _ value: Int) { RowBuffers.store(storage, i, value, bytesPerSample) }
        func copy(to destination: UnsafeMutableRawPointer, from offset: Int, count: Int) {
            destination.copyMemory(from: storage + offset * bytesPerSample, byteCount: count * bytesPerSample)
        }
    }
    let bytesPerSample: Int
    let pattern: Row
    let patch: Row
    let chroma: Row

    init(width: Int, bitDepth: Int) {
        bytesPerSample = bitDepth > 8 ? 2 : 1
        pattern = Row(count: width + 64, bytesPerSample: bytesPerSample)
        patch = Row(count: width, bytesPerSample: bytesPerSample)
        chroma = Row(count: width, bytesPerSample: bytesPerSample)
    }

    func set(_ row: UnsafeMutableRawPointer, _ x: Int, _ value: Int) { RowBuffers.store(row, x, value, bytesPerSample) }

    static func store(_ base: UnsafeMutableRawPointer, _ i: Int, _ value: Int, _ bytesPerSample: Int) {
        if bytesPerSample == 2 {
            base.assumingMemoryBound(to: UInt16.self)[i] = UInt16(min(max(value, 0), 1023))
        } else {
            base.assumingMemoryBound(to: UInt8.self)[i] = UInt8(min(max(value, 0), 255))
        }
    }
}

/// Reads the frame index that `Synth` drew at the bottom of every frame.
public enum Barcode {
    public static let bits = 16

    /// Decodes the barcode from an 8-bit luma plane of any size (it scales with the picture).
    public static func read(luma: UnsafeBufferPointer<UInt8>, width: Int, height: Int, stride: Int) -> Int {
        let barHeight = max(8, height / 12)
        let y = height - barHeight / 2
        let cell = Double(width) / Double(bits)  // Synth widths are multiples of 16
        var value = 0
        for bit in 0..<bits {
            let x = Int((Double(bit) + 0.5) * cell)
            value = value << 1 | (luma[y * stride + x] > 128 ? 1 : 0)
        }
        return value
    }
}

/// A small deterministic random generator (tests must be reproducible).
public struct SplitMix {
    private var state: UInt64
    public init(seed: UInt64) { state = seed }
    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
    public mutating func nextUnit() -> Double { Double(next() >> 11) / Double(1 << 53) }
}
