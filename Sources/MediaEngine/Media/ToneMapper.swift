import Foundation

/// Converts HDR pictures (BT.2020 primaries and matrix, PQ or HLG transfer) to SDR BT.709 8-bit
/// yuv420p, at the output size: the source is first scaled to the output size in 10-bit
/// (`VideoConverter`), so the tone mapping never touches more pixels than are written.
///
/// Luminance-based tone curve (hue preserved): linear up to a knee, then an exponential shoulder
/// that reaches white at the content's peak; diffuse white (203 nits, ITU-R BT.2408) lands near
/// SDR white. HLG gets its system OOTF (gamma 1.2 on scene luminance, 1000-nit display). Every
/// transcendental function is in a lookup table built once: the per-pixel work is a few
/// multiplies, three table reads for the transfer, one for the tone curve and three for the
/// BT.1886 gamma (the last two indexed by a square root, which keeps their steps fine near black).
final class ToneMapper {
    enum Transfer { case pq, hlg }

    /// Reference (diffuse) white in nits: 1.0 in the linear domain below.
    static let referenceWhite = 203.0
    /// Below this linear level the curve is the identity.
    static let knee = 0.5
    /// Assumed mastering peak for PQ content; HLG's nominal display peak.
    static let peakNits = 1000.0

    /// Steps of the transfer table (signal 0...1).
    static let signalSteps = 4096
    /// Steps of the gain and gamma tables (square root of the linear value, 0...1).
    static let rootSteps = 4096

    let transfer: Transfer
    /// Non-linear signal (0...1) -> linear: HLG scene light (0...1), PQ display light (1.0 = reference white).
    private let toLinear: [Float]
    /// sqrt(luminance / luminanceRange) -> the factor that tone-maps (and for HLG, applies the OOTF to) RGB.
    private let gain: [Float]
    private let luminanceRange: Float
    /// sqrt(linear BT.709 light, 0...1) -> BT.1886 signal (0...1).
    private let toGamma: [Float]

    init(transfer: Transfer) {
        self.transfer = transfer
        let ootfScale = ToneMapper.peakNits / ToneMapper.referenceWhite
        toLinear = (0..<ToneMapper.signalSteps).map { i in
            let e = Double(i) / Double(ToneMapper.signalSteps - 1)
            switch transfer {
            case .pq:
                let m1 = 0.1593017578125, m2 = 78.84375, c1 = 0.8359375, c2 = 18.8515625, c3 = 18.6875
                let p = pow(e, 1 / m2)
                return Float(10_000 * pow(max(p - c1, 0) / (c2 - c3 * p), 1 / m1) / ToneMapper.referenceWhite)
            case .hlg:
                let a = 0.17883277, b = 0.28466892, c = 0.55991073
                return Float(e <= 0.5 ? e * e / 3 : (exp((e - c) / a) + b) / 12)
            }
        }
        let range = transfer == .pq ? 10_000 / ToneMapper.referenceWhite : 1
        luminanceRange = Float(range)
        gain = (0..<ToneMapper.rootSteps).map { i in
            let root = Double(i) / Double(ToneMapper.rootSteps - 1)
            let y = root * root * range
            guard y > 0 else { return transfer == .pq ? 1 : 0 }
            switch transfer {
            case .pq:
                return Float(ToneMapper.curve(y, peak: ootfScale) / y)
            case .hlg:
                // Display light = ootfScale * Ys^0.2 * scene RGB, display luminance = ootfScale * Ys^1.2.
                let display = ootfScale * pow(y, 1.2)
                return Float(ToneMapper.curve(display, peak: ootfScale) / y)
            }
        }
        toGamma = (0..<ToneMapper.rootSteps).map { i in
            let root = Double(i) / Double(ToneMapper.rootSteps - 1)
            return Float(pow(root * root, 1 / 2.4))
        }
    }

    /// The tone curve on linear luminance (1.0 = reference white); returns 0...1. Used to build
    /// the tables only.
    static func curve(_ l: Double, peak: Double) -> Double {
        guard l > knee else { return l }
        let span = 1 - knee
        let x = (l - knee) / max(peak - knee, 1e-3) * 4 // reaches ~98 % of white at the peak
        return knee + span * (1 - exp(-x))
    }

    /// Tone-maps a 10-bit limited-range yuv420p picture (BT.2020 matrix, samples in UInt16) into
    /// an 8-bit limited-range BT.709 yuv420p picture of the same even size. Strides in bytes.
    func map(y sourceY: UnsafeRawPointer, u sourceU: UnsafeRawPointer, v sourceV: UnsafeRawPointer,
             strides source: (y: Int, u: Int, v: Int),
             into destinationY: UnsafeMutablePointer<UInt8>, _ destinationU: UnsafeMutablePointer<UInt8>,
             _ destinationV: UnsafeMutablePointer<UInt8>, strides destination: (y: Int, u: Int, v: Int),
             width: Int, height: Int) {
        let signalScale = Float(ToneMapper.signalSteps - 1)
        let rootScale = Float(ToneMapper.rootSteps - 1)
        let inverseRange = 1 / luminanceRange
        toLinear.withUnsafeBufferPointer { lin in
            gain.withUnsafeBufferPointer { gains in
                toGamma.withUnsafeBufferPointer { gam in
                    // One source pixel (luma code `code`, shared chroma terms) to BT.709 R'G'B'.
                    @inline(__always) func pixel(_ code: UInt16, _ crR: Float, _ cG: Float, _ cbB: Float) -> SIMD3<Float> {
                        let luma = (Float(code) - 64) * (1 / 876)
                        let r = lin[Int(min(max(luma + crR, 0), 1) * signalScale + 0.5)]
                        let g = lin[Int(min(max(luma + cG, 0), 1) * signalScale + 0.5)]
                        let b = lin[Int(min(max(luma + cbB, 0), 1) * signalScale + 0.5)]
                        let l = min(0.2627 * r + 0.6780 * g + 0.0593 * b, luminanceRange)
                        let k = gains[Int((l * inverseRange).squareRoot() * rootScale + 0.5)]
                        // BT.2020 -> BT.709 primaries, in linear light.
                        let r7 = min(max((1.6605 * r - 0.5876 * g - 0.0728 * b) * k, 0), 1)
                        let g7 = min(max((-0.1246 * r + 1.1329 * g - 0.0083 * b) * k, 0), 1)
                        let b7 = min(max((-0.0182 * r - 0.1006 * g + 1.1187 * b) * k, 0), 1)
                        return SIMD3(gam[Int(r7.squareRoot() * rootScale + 0.5)],
                                     gam[Int(g7.squareRoot() * rootScale + 0.5)],
                                     gam[Int(b7.squareRoot() * rootScale + 0.5)])
                    }
                    @inline(__always) func luma8(_ p: SIMD3<Float>) -> UInt8 {
                        UInt8(16.5 + 219 * (0.2126 * p.x + 0.7152 * p.y + 0.0722 * p.z))
                    }
                    for row in 0..<(height / 2) {
                        let y0 = (sourceY + 2 * row * source.y).assumingMemoryBound(to: UInt16.self)
                        let y1 = (sourceY + (2 * row + 1) * source.y).assumingMemoryBound(to: UInt16.self)
                        let us = (sourceU + row * source.u).assumingMemoryBound(to: UInt16.self)
                        let vs = (sourceV + row * source.v).assumingMemoryBound(to: UInt16.self)
                        let d0 = destinationY + 2 * row * destination.y
                        let d1 = destinationY + (2 * row + 1) * destination.y
                        let du = destinationU + row * destination.u
                        let dv = destinationV + row * destination.v
                        for column in 0..<(width / 2) {
                            // BT.2020 non-constant-luminance matrix.
                            let cb = (Float(us[column]) - 512) * (1 / 896)
                            let cr = (Float(vs[column]) - 512) * (1 / 896)
                            let crR = 1.4746 * cr, cG = -0.16455 * cb - 0.57135 * cr, cbB = 1.8814 * cb
                            let x = 2 * column
                            let a = pixel(y0[x], crR, cG, cbB), b = pixel(y0[x + 1], crR, cG, cbB)
                            let c = pixel(y1[x], crR, cG, cbB), d = pixel(y1[x + 1], crR, cG, cbB)
                            d0[x] = luma8(a)
                            d0[x + 1] = luma8(b)
                            d1[x] = luma8(c)
                            d1[x + 1] = luma8(d)
                            let sum = (a + b + c + d) * 0.25
                            let yy = 0.2126 * sum.x + 0.7152 * sum.y + 0.0722 * sum.z
                            du[column] = UInt8(min(max(128.5 + 224 * (sum.z - yy) * (1 / 1.8556), 0), 255))
                            dv[column] = UInt8(min(max(128.5 + 224 * (sum.x - yy) * (1 / 1.5748), 0), 255))
                        }
                    }
                }
            }
        }
    }
}
