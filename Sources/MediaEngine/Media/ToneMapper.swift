import Foundation

/// Converts HDR pictures (BT.2020 primaries, PQ or HLG transfer) to SDR BT.709 for 8-bit output.
/// Luminance-based tone curve (hue preserved): linear up to a knee, then an exponential shoulder
/// that reaches white at the content's peak; diffuse white (203 nits, ITU-R BT.2408) lands near
/// SDR white. Lookup tables are built once; the per-pixel work is a few multiplies.
final class ToneMapper {
    enum Transfer { case pq, hlg }

    /// Reference (diffuse) white in nits: 1.0 in the linear domain below.
    static let referenceWhite = 203.0
    /// Below this linear level the curve is the identity.
    static let knee: Float = 0.5
    /// Assumed mastering peak for PQ content; HLG's nominal display peak.
    static let peakNits = 1000.0

    private let toLinear: [Float]      // 16-bit code -> linear, 1.0 = reference white
    private let toGamma: [UInt8]       // linear 0...1 in 4096 steps -> 8-bit BT.1886 code
    private static let gammaSteps = 4096

    init(transfer: Transfer) {
        var table = [Float](repeating: 0, count: 65_536)
        for code in 0..<65_536 {
            let e = Double(code) / 65_535
            let nits: Double
            switch transfer {
            case .pq:
                let m1 = 0.1593017578125, m2 = 78.84375, c1 = 0.8359375, c2 = 18.8515625, c3 = 18.6875
                let p = pow(e, 1 / m2)
                nits = 10_000 * pow(max(p - c1, 0) / (c2 - c3 * p), 1 / m1)
            case .hlg:
                let a = 0.17883277, b = 0.28466892, c = 0.55991073
                let scene = e <= 0.5 ? e * e / 3 : (exp((e - c) / a) + b) / 12
                nits = ToneMapper.peakNits * pow(scene, 1.2)
            }
            table[code] = Float(nits / ToneMapper.referenceWhite)
        }
        toLinear = table
        toGamma = (0..<ToneMapper.gammaSteps).map { i in
            let v = pow(Double(i) / Double(ToneMapper.gammaSteps - 1), 1 / 2.4)
            return UInt8(min(255, max(0, (v * 255).rounded())))
        }
    }

    /// The tone curve on linear luminance (1.0 = reference white); returns 0...1.
    static func curve(_ l: Float, peak: Float) -> Float {
        guard l > knee else { return l }
        let span = 1 - knee
        let x = (l - knee) / max(peak - knee, 1e-3) * 4 // reaches ~98 % of white at the peak
        return knee + span * (1 - exp(-x))
    }

    /// Maps packed RGB48 (full range, little-endian) to packed RGB24, `width` x `height`.
    func map(rgb48 source: UnsafePointer<UInt16>, sourceStride: Int, rgb24 destination: UnsafeMutablePointer<UInt8>,
             destinationStride: Int, width: Int, height: Int) {
        let peak = Float(ToneMapper.peakNits / ToneMapper.referenceWhite)
        let steps = Float(ToneMapper.gammaSteps - 1)
        toLinear.withUnsafeBufferPointer { lin in
            toGamma.withUnsafeBufferPointer { gam in
                for y in 0..<height {
                    let s = UnsafeRawPointer(source).advanced(by: y * sourceStride).assumingMemoryBound(to: UInt16.self)
                    let d = destination.advanced(by: y * destinationStride)
                    for x in 0..<width {
                        let r = lin[Int(UInt16(littleEndian: s[3 * x]))]
                        let g = lin[Int(UInt16(littleEndian: s[3 * x + 1]))]
                        let b = lin[Int(UInt16(littleEndian: s[3 * x + 2]))]
                        let l = 0.2627 * r + 0.6780 * g + 0.0593 * b
                        let k: Float = l > 1e-6 ? ToneMapper.curve(l, peak: peak) / l : 1
                        // BT.2020 -> BT.709 primaries, in linear light.
                        let r7 = (1.6605 * r - 0.5876 * g - 0.0728 * b) * k
                        let g7 = (-0.1246 * r + 1.1329 * g - 0.0083 * b) * k
                        let b7 = (-0.0182 * r - 0.1006 * g + 1.1187 * b) * k
                        d[3 * x] = gam[Int(min(max(r7, 0), 1) * steps)]
                        d[3 * x + 1] = gam[Int(min(max(g7, 0), 1) * steps)]
                        d[3 * x + 2] = gam[Int(min(max(b7, 0), 1) * steps)]
                    }
                }
            }
        }
    }
}
