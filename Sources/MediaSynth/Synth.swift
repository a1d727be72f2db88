import Foundation
import MediaEngine

/// Synthesises test videos with known content, encoded by MediaEngine's own writer: shots with
/// their own colours and motion, hard cuts at chosen times, white flashes, beeps, rotation, variable
/// frame rate, 10-bit HDR. Every frame carries its index as a barcode (`Barcode`) so a test can
/// tell exactly which source frame a decoded picture came from.
public struct SynthSpec: Sendable {
    public var width = 320
    public var height = 240
    public var frameRate = Rational(30, 1)
    public var duration = 4.0
    /// Times (seconds) where a new shot starts.
    public var cuts: [Double] = []
    /// Times of white flashes; each lasts `flashFrames` frames.
    public var flashes: [Double] = []
    public var flashFrames = 1
    /// Times where a 1 kHz beep starts; each lasts `beepLength` seconds.
    public var beeps: [Double] = []
    public var beepLength = 0.1
    /// Write an audio track (quiet noise between beeps).
    public var audio = true
    /// Clockwise rotation written in the display matrix.
    public var rotation = 0
    /// Frame durations cycle through 1/30, 1/30, 1/15, 1/24 s instead of a constant rate.
    public var variableFrameRate = false
    /// 10-bit PQ (HDR10) video: three bands at 0, 100 and 1000 nits.
    public var hdr = false
    /// 10-bit SDR video.
    public var tenBit = false
    public var keyframeIntervalSeconds = 2.0
    public var preset = "ultrafast"
    public var crf = 18

    public init() {}

    /// Number of frames in the file.
    public var frameCount: Int {
        if variableFrameRate { return SynthSpec.vfrTimes(until: duration).count }
        return Int((duration * frameRate.value).rounded())
    }

    /// Presentation times of every frame.
    public var frameTimes: [Double] {
        if variableFrameRate { return SynthSpec.vfrTimes(until: duration) }
        return (0..<frameCount).map { Double($0) * Double(frameRate.den) / Double(frameRate.num) }
    }

    static let vfrTicks: [Int64] = [3000, 3000, 6000, 3750] // in 1/90000 s

    static func vfrTimes(until duration: Double) -> [Double] {
        var times: [Double] = []
        var tick: Int64 = 0, i = 0
        while Double(tick) / 90_000 < duration - 1e-9 {
            times.append(Double(tick) / 90_000)
            tick += vfrTicks[i % vfrTicks.count]
            i += 1
        }
        return times
    }

    /// The shot (0-based) a time falls in.
    public func shot(at time: Double) -> Int { cuts.filter { $0 <= time + 1e-9 }.count }
}

public enum Synth {
    /// Writes the video described by `spec` to `path`.
    public static func write(_ spec: SynthSpec, to path: String) throws(MediaError) {
        var video = VideoEncoding(width: spec.width, height: spec.height, frameRate: spec.frameRate)
        video.preset = spec.preset
        video.crf = spec.crf
        video.keyframeIntervalSeconds = spec.keyframeIntervalSeconds
        video.rotation = spec.rotation
        video.tenBit = spec.hdr || spec.tenBit
        if spec.hdr { video.color = .hdr10 }
        if spec.variableFrameRate { video.timeBase = Rational(1, 90_000) }
        let writer = try MediaWriter(path: path, video: video, audio: spec.audio ? AudioEncoding() : nil)

        let times = spec.frameTimes
        let sampleRate = 48_000
        var samplesWritten = 0
        var audio = [Float]()
        var noise = SplitMix(seed: 7)
        for (index, time) in times.enumerated() {
            let pts: Int64 = spec.variableFrameRate ? Int64((time * 90_000).rounded()) : Int64(index)
            try writer.writePicture(pts: pts) { planes in
                draw(spec, frame: index, time: time, into: planes)
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
    static func draw(_ spec: SynthSpec, frame: Int, time: Double, into p: PicturePlanes) {
        let shot = spec.shot(at: time)
        let flash = spec.flashes.contains { time >= $0 - 1e-6 && time < $0 + Double(spec.flashFrames) / spec.frameRate.value - 1e-6 }
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
        let barHeight = max(8, p.height / 12)
        if spec.hdr {
            // Bands of known brightness: black, 100 nits (diffuse grey), 1000 nits (highlight).
            let codes = [pqCode(nits: 0), pqCode(nits: 100), pqCode(nits: 1000)]
            for y in 0..<(p.height - barHeight) {
                for x in 0..<p.width { put(p.y, p.yStride, x, y, codes[min(2, x * 3 / p.width)]) }
            }
        } else {
            let baseLuma = flash ? 235 : 40 + (shot * 53) % 150
            let square = 32, sx = (frame * 4) % max(1, p.width - square), sy = p.height / 3
            for y in 0..<(p.height - barHeight) {
                for x in 0..<p.width {
                    var luma = baseLuma
                    if !flash {
                        luma += ((x + y + frame * 2) % 64) / 4 // a moving diagonal texture
                        if x >= sx && x < sx + square && y >= sy && y < sy + square { luma = 220 }
                    }
                    put(p.y, p.yStride, x, y, luma * scale)
                }
            }
        }
        drawBarcode(frame, into: p, top: p.height - barHeight, put: put, scale: scale)
        let u = flash ? 128 : 128 + ((shot * 37) % 96) - 48
        let v = flash ? 128 : 128 - ((shot * 61) % 96) + 48
        for y in 0..<(p.height / 2) {
            for x in 0..<(p.width / 2) {
                put(p.u, p.uStride, x, y, (spec.hdr ? 128 : u) * scale)
                put(p.v, p.vStride, x, y, (spec.hdr ? 128 : v) * scale)
            }
        }
    }

    static func drawBarcode(_ value: Int, into p: PicturePlanes, top: Int,
                            put: (UnsafeMutableRawPointer, Int, Int, Int, Int) -> Void, scale: Int) {
        let cell = p.width / Barcode.bits
        for bit in 0..<Barcode.bits {
            let on = (value >> (Barcode.bits - 1 - bit)) & 1 == 1
            for y in top..<p.height {
                for x in (bit * cell)..<min(p.width, (bit + 1) * cell) { put(p.y, p.yStride, x, y, (on ? 235 : 16) * scale) }
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

/// Reads the frame index that `Synth` drew at the bottom of every frame.
public enum Barcode {
    public static let bits = 16

    /// Decodes the barcode from an 8-bit luma plane of any size (it scales with the picture).
    public static func read(luma: UnsafeBufferPointer<UInt8>, width: Int, height: Int, stride: Int) -> Int {
        let barHeight = max(8, height / 12)
        let y = height - barHeight / 2
        let cell = Double(width) / Double(bits) // Synth widths are multiples of 16
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
