import Foundation
import MediaEngine

/// Synthesises test videos with known content, encoded by MediaEngine's own writer: shots with
/// their own colours and motion, hard cuts at chosen times, white flashes, beeps, rotation, variable
/// frame rate, 10-bit HDR (PQ or HLG), H.264 or HEVC, phone-like GOPs (`SynthSpec.phone`). Every
/// frame carries its index as a barcode (`Barcode`) so a test can tell exactly which source frame a
/// decoded picture came from.
public struct SynthSpec: Sendable {
    /// The HDR transfer function of 10-bit HDR video.
    public enum HDRTransfer: String, Sendable, CaseIterable {
        /// SMPTE ST 2084 (HDR10): three bands at 0, 100 and 1000 nits fill the picture.
        case pq
        /// ARIB STD-B67 (what phones record): the usual shots, cuts and flashes in HLG codes, plus
        /// calibration patches (`hlgPatches`) at known HLG levels in the top-left corner.
        case hlg
    }
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
    /// 10-bit HDR video with this transfer (BT.2020 primaries and matrix); nil for SDR.
    public var hdrTransfer: HDRTransfer?
    /// 10-bit HDR video: setting it true picks PQ (HDR10) unless `hdrTransfer` is already set.
    public var hdr: Bool {
        get { hdrTransfer != nil }
        set { hdrTransfer = newValue ? (hdrTransfer ?? .pq) : nil }
    }
    /// HDR10 static metadata (mastering display, content light level) in the container.
    public var hdrStaticMetadata = false
    /// 10-bit SDR video.
    public var tenBit = false
    /// H.264 (libx264) or HEVC (libx265, `hvc1`).
    public var codec = VideoEncoding.Codec.h264
    public var keyframeIntervalSeconds = 2.0
    /// P-frames only, a keyframe exactly every `keyframeIntervalSeconds`, no scene-cut keyframes
    /// (the GOP structure of a phone recording).
    public var fixedGOPWithoutBFrames = false
    /// H.264 with exactly this many B-frames between anchors, a keyframe exactly every
    /// `keyframeIntervalSeconds`, no scene-cut keyframes (0: the preset's own choice).
    public var fixedBFrames = 0
    /// When set: a keyframe (IDR) at exactly these times and nowhere else, P-frames only, no
    /// scene-cut keyframes (`keyframeIntervalSeconds` is not used). The first frame is always one.
    public var keyframeTimes: [Double] = []
    public var preset = "ultrafast"
    public var crf = 18
    /// Draw the frame-index barcode (off for content that must not change, such as frozen parts).
    public var barcode = true
    /// Parts of the video with content of a known character, in time order; each starts a shot.
    /// When set, `cuts` is ignored (every part is its own shot).
    public var parts: [SynthPart] = []

    public init() {}

    /// A phone recording as an iPhone writes it: HEVC Main10 (libx265) with HLG (BT.2020,
    /// ARIB STD-B67) by default, P-frames only with a keyframe every second, stored landscape
    /// `width` x `height` and shown portrait through the display matrix (`rotation`, clockwise),
    /// AAC stereo. Cuts, flashes, beeps and parts are set on the result as for any spec.
    /// 4K HEVC is slow to encode: keep 3840x2160 clips to a second or two, and use 1920x1080
    /// where 4K itself is not what a test is about.
    public static func phone(
        width: Int = 3840, height: Int = 2160, frameRate: Int = 60, duration: Double = 1.5,
        transfer: HDRTransfer? = .hlg, rotation: Int = 90
    ) -> SynthSpec {
        var spec = SynthSpec()
        spec.width = width
        spec.height = height
        spec.frameRate = Rational(frameRate, 1)
        spec.duration = duration
        spec.rotation = rotation
        spec.codec = .hevc
        spec.hdrTransfer = transfer
        spec.tenBit = true
        spec.keyframeIntervalSeconds = 1
        spec.fixedGOPWithoutBFrames = true
        spec.preset = "ultrafast"
        spec.crf = 20
        return spec
    }

    /// Where HLG video (`hdrTransfer == .hlg`) carries its calibration patches, in stored pixels:
    /// square patches side by side from the top-left corner, neutral chroma, on every frame but flashes.
    public var hlgPatches: [SynthPatch] {
        let side = max(16, height / 8) / 2 * 2
        return SynthPatch.Level.allCases.enumerated().map { i, level in
            SynthPatch(level: level, x: i * side, y: 0, size: side)
        }
    }

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

    static let vfrTicks: [Int64] = [3000, 3000, 6000, 3750]  // in 1/90000 s

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

    /// The part playing at `time`, and the time within it.
    public func part(at time: Double) -> (SynthPart, Double)? {
        guard let index = parts.lastIndex(where: { $0.start <= time + 1e-9 }) else { return nil }
        return (parts[index], time - parts[index].start)
    }
}

/// A flat square of a known HLG level in HLG test video (ITU-R BT.2408 reference levels).
public struct SynthPatch: Sendable, Equatable {
    public enum Level: String, Sendable, CaseIterable {
        /// Signal 0: black.
        case black
        /// Signal 0.38: an 18 % grey card.
        case grey
        /// Signal 0.75: diffuse (reference) white, 203 cd/m² on a 1000 cd/m² display.
        case diffuseWhite
        /// Signal 1.0: the brightest highlight (1000 cd/m²).
        case peak

        /// The HLG signal (0...1).
        public var signal: Double {
            switch self {
            case .black: 0
            case .grey: 0.38
            case .diffuseWhite: 0.75
            case .peak: 1
            }
        }

        /// The 10-bit limited-range code.
        public var code: Int { Int((64 + signal * 876).rounded()) }
    }
    public var level: Level
    public var x: Int
    public var y: Int
    public var size: Int
}

/// A stretch of synthetic content with a known character, for testing what a highlight picks.
public struct SynthPart: Sendable {
    public enum Kind: Sendable, Equatable {
        /// Textured scene with a large object moving fast, and loud rhythmic sound (bursts with gaps).
        case lively
        /// The same scene standing still, with quiet sound.
        case dull
        case black
        /// One picture, repeated, quiet.
        case frozen
        /// A lively scene, heavily blurred.
        case blurred
        /// The still scene of `dull` (no drift) with a subject standing at `subjectX`, swaying a
        /// little: two posed parts of one seed with the subject elsewhere make a jump cut.
        case posed
    }
    public var start: Double
    public var kind: Kind
    /// Picks the scene's texture and colours; equal seeds (and kinds) make the same footage.
    public var seed: Int
    /// Where a posed part's subject stands, as a fraction of the picture's width.
    public var subjectX: Double

    public init(start: Double, kind: Kind, seed: Int, subjectX: Double = 0.3) {
        self.start = start
        self.kind = kind
        self.seed = seed
        self.subjectX = subjectX
    }

    /// The sound of this part at `t` seconds into it.
    func sample(at t: Double, noise: inout SplitMix) -> Float {
        switch kind {
        case .lively:
            // 250 ms bursts, 150 ms gaps: loud, eventful, and with quiet points to cut at.
            let phase = t.truncatingRemainder(dividingBy: 0.4)
            guard phase < 0.25 else { return 0 }
            return Float((noise.nextUnit() - 0.5) * 0.6 + sin(2 * Double.pi * Double(220 + 40 * seed) * t) * 0.3)
        case .dull, .frozen, .blurred, .posed:
            return Float((noise.nextUnit() - 0.5) * 0.01)
        case .black:
            return 0
        }
    }
}
