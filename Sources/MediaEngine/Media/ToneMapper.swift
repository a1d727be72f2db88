import CFFmpeg
import CMediaKernels
import FFmpeg
import Foundation

/// Converts HDR pictures (BT.2020 primaries, PQ or HLG transfer) to SDR BT.709 for 8-bit output.
/// Luminance-based tone curve (hue preserved): linear up to a knee, then an exponential shoulder
/// that reaches white at the content's peak; diffuse white (203 nits, ITU-R BT.2408) lands near
/// SDR white. Lookup tables are built once; the per-pixel work is a few multiplies.
package final class ToneMapper {
    package enum Transfer {
        case pq, hlg

        /// The HDR transfer a stream is tagged with; nil for SDR (and untagged) video.
        package init?(of stream: StreamHandle) {
            switch stream.parameters.pointee.color_trc {
            case AVCOL_TRC_SMPTE2084: self = .pq
            case AVCOL_TRC_ARIB_STD_B67: self = .hlg
            default: return nil
            }
        }
    }

    /// Reference (diffuse) white in nits: 1.0 in the linear domain below.
    package static let referenceWhite = 203.0
    /// Below this linear level the curve is the identity.
    package static let knee: Float = 0.5
    /// Assumed mastering peak for PQ content; HLG's nominal display peak.
    package static let peakNits = 1000.0

    // The kernel's tables (moments_tone_tables): non-linear value -> linear, luminance -> gain,
    // linear -> 8-bit code. The whole curve is looked up: no transcendental maths per pixel.
    private let kernelLinear: UnsafeMutablePointer<Float>
    private let kernelGain: UnsafeMutablePointer<Float>
    private let kernelGamma: UnsafeMutablePointer<UInt8>
    private let kernelGrey: UnsafeMutablePointer<Float>
    /// Linear luminance covered by the gain table: PQ's 10 000 nits.
    package static let gainMax: Float = Float(10_000 / referenceWhite)

    package init(transfer: Transfer) {
        let steps = Int(MOMENTS_TONE_STEPS), gainSteps = Int(MOMENTS_GAIN_STEPS)
        kernelLinear = .allocate(capacity: steps)
        kernelGamma = .allocate(capacity: steps)
        kernelGain = .allocate(capacity: gainSteps)
        kernelGrey = .allocate(capacity: 1024)
        for i in 0..<steps {
            let e = Double(i) / Double(steps - 1)
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
            kernelLinear[i] = Float(nits / ToneMapper.referenceWhite)
            // BT.1886 (gamma 2.4) encoding of linear light.
            kernelGamma[i] = UInt8(min(255, max(0, (pow(e, 1 / 2.4) * 255).rounded())))
        }
        let peak = Float(ToneMapper.peakNits / ToneMapper.referenceWhite)
        for i in 0..<gainSteps {
            let l = Float(i) / Float(gainSteps - 1) * ToneMapper.gainMax
            kernelGain[i] = l > 1e-6 ? ToneMapper.curve(l, peak: peak) / l : 1
        }
        // A neutral grey of each 10-bit Y' code through the same curve, to 8-bit limited-range Y'.
        for code in 0..<1024 {
            let e = min(1, max(0, (Double(code) - 64) / 876))
            let linear = kernelLinear[Int(e * Double(steps - 1))]
            let mapped = linear > 1e-6 ? ToneMapper.curve(linear, peak: peak) : linear
            let gamma = Double(kernelGamma[Int(Double(min(1, max(0, mapped))) * Double(steps - 1))])
            kernelGrey[code] = Float(16 + gamma * 219 / 255)
        }
    }

    deinit {
        kernelLinear.deallocate()
        kernelGain.deallocate()
        kernelGamma.deallocate()
        kernelGrey.deallocate()
    }

    /// Maps a 10-bit BT.2020 yuv420p picture to an 8-bit BT.709 yuv420p picture of the same size,
    /// or of half its width and height (`halve`: each output sample the mean of 2x2).
    package func map(yuv420p10 source: Frame, into output: Frame, halve: Bool = false) throws(MediaError) {
        guard let y = source.data(0), let u = source.data(1), let v = source.data(2),
            let oy = output.data(0), let ou = output.data(1), let ov = output.data(2)
        else {
            throw MediaError(.ffmpeg, operation: "tone map", detail: "picture has no data")
        }
        var tables = moments_tone_tables(
            linear: kernelLinear, gain: kernelGain, gain_max: ToneMapper.gainMax, gamma: kernelGamma,
            grey: kernelGrey)
        func words(_ p: UnsafeMutablePointer<UInt8>) -> UnsafePointer<UInt16> {
            UnsafePointer(UnsafeRawPointer(p).assumingMemoryBound(to: UInt16.self))
        }
        moments_tonemap_420p10_to_420p(
            words(y), source.linesize(0) / 2, words(u), words(v), source.linesize(1) / 2,
            oy, output.linesize(0), ou, ov, output.linesize(1),
            Int32(output.width), Int32(output.height), halve ? 1 : 0, &tables)
    }

    /// The tone curve on linear luminance (1.0 = reference white); returns 0...1.
    package static func curve(_ l: Float, peak: Float) -> Float {
        guard l > knee else { return l }
        let span = 1 - knee
        let x = (l - knee) / max(peak - knee, 1e-3) * 4  // reaches ~98 % of white at the peak
        return knee + span * (1 - exp(-x))
    }
}
