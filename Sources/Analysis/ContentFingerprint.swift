import Foundation

/// A video's content fingerprint for recognising re-uploads: made during the analysis
/// pass from the frames it already measures, in DISPLAY orientation (rotation metadata applied), so
/// a re-encode, another bitrate or resolution, rotation carried as metadata or baked into the pixels,
/// and trimming at either end all leave it recognisable. `FingerprintMatcher` aligns two of them.
///
/// Two tracks:
/// - `entries`, one per `step` seconds from t = 0: the 64-bit DCT hash (`DCTHash`) of the mean
///   display-oriented 32x32 thumbnail of the frames analysed in that step, nil where none was (the
///   sampled plan's gaps). Per entry also the mean time of those frames within the step (`phases`),
///   the thumbnail's mean luma (`lumas`) and whether it is flat (`flat`: too little structure for its
///   hash to mean anything, e.g. black). Used to find and judge the alignment.
/// - `track`, on a `trackRate` grid: two low-frequency cosine coefficients (horizontal, vertical) of
///   the display-oriented thumbnail, quantised, `FingerprintTrack.missing` where no frame was
///   analysed. Dense in a full decode (every frame up to `trackRate`): it refines the offset to the frame.
///
/// JSON: arrays as base64 of their bytes (about 90 KB for a 10-minute full decode at the defaults).
public struct ContentFingerprint: Sendable, Codable, Equatable {
    public static let currentVersion = 1
    public var version = ContentFingerprint.currentVersion
    /// Seconds per entry.
    public var step: Double
    /// Per step from t = 0: the DCT hash of the display-oriented mean thumbnail of the analysed
    /// frame(s) in that step; nil where no frame was analysed.
    public var entries: [UInt64?]
    /// Seconds (the analysed length).
    public var duration: Double
    /// Per entry: the mean time of its frames within the step, in 1/255 of the step (0 where nil).
    public var phases: [UInt8]
    /// Per entry: the mean luma of its thumbnail, 0...255 (0 where nil).
    public var lumas: [UInt8]
    /// Per entry: the thumbnail had too little structure for its hash to carry information.
    public var flat: [Bool]
    /// Samples per second of `track`.
    public var trackRate: Double
    /// Two values per grid cell (cell c at time c / trackRate): the first horizontal and vertical
    /// cosine coefficients of the display-oriented thumbnail, coded by `FingerprintTrack.encode`;
    /// `FingerprintTrack.missing` in both where no frame was analysed.
    public var track: [Int8]

    public init(
        step: Double, entries: [UInt64?], duration: Double, phases: [UInt8]? = nil, lumas: [UInt8]? = nil,
        flat: [Bool]? = nil, trackRate: Double = 30, track: [Int8] = []
    ) {
        self.step = step
        self.entries = entries
        self.duration = duration
        self.phases = phases ?? [UInt8](repeating: 128, count: entries.count)
        self.lumas = lumas ?? [UInt8](repeating: 128, count: entries.count)
        self.flat = flat ?? [Bool](repeating: false, count: entries.count)
        self.trackRate = trackRate
        self.track = track
    }

    /// The time an entry stands for: the mean time of its frames.
    @inline(__always) public func time(ofEntry i: Int) -> Double {
        (Double(i) + Double(i < phases.count ? phases[i] : 128) / 255) * step
    }

    /// An entry in at least `share` of the steps: a full analysis decode (every frame), not a
    /// keyframe look or the sampled plan.
    public func isDense(share: Double = 0.9) -> Bool {
        let present = entries.reduce(0) { $0 + ($1 != nil ? 1 : 0) }
        return Double(present) >= share * Double(max(1, entries.count))
    }

    /// Entries with a hash that carries information.
    public var informativeCount: Int {
        var n = 0
        for i in entries.indices where entries[i] != nil && !flat[i] { n += 1 }
        return n
    }

    // MARK: Compact coding

    enum CodingKeys: String, CodingKey {
        case version = "v", step, duration, hashes, present, phases, lumas, flat, trackRate = "track_rate", track
    }

    public init(from decoder: Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        version = try c.decode(Int.self, forKey: .version)
        step = try c.decode(Double.self, forKey: .step)
        duration = try c.decode(Double.self, forKey: .duration)
        trackRate = try c.decode(Double.self, forKey: .trackRate)
        guard step > 0, step.isFinite, trackRate > 0, trackRate.isFinite, duration.isFinite else {
            throw DecodingError.dataCorruptedError(forKey: .step, in: c, debugDescription: "bad step, rate or duration")
        }
        func bytes(_ key: CodingKeys) throws -> [UInt8] {
            guard let data = Data(base64Encoded: try c.decode(String.self, forKey: key)) else {
                throw DecodingError.dataCorruptedError(forKey: key, in: c, debugDescription: "not base64")
            }
            return [UInt8](data)
        }
        let hashBytes = try bytes(.hashes)
        guard hashBytes.count % 8 == 0 else {
            throw DecodingError.dataCorruptedError(forKey: .hashes, in: c, debugDescription: "not whole hashes")
        }
        let count = hashBytes.count / 8
        let present = Self.unpackBits(try bytes(.present), count: count)
        let flatBits = Self.unpackBits(try bytes(.flat), count: count)
        phases = try bytes(.phases)
        lumas = try bytes(.lumas)
        guard present.count == count, flatBits.count == count, phases.count == count, lumas.count == count else {
            throw DecodingError.dataCorruptedError(forKey: .present, in: c, debugDescription: "track lengths differ")
        }
        var list = [UInt64?](repeating: nil, count: count)
        for i in 0..<count where present[i] {
            var h: UInt64 = 0
            for b in 0..<8 { h |= UInt64(hashBytes[i * 8 + b]) << UInt64(8 * b) }
            list[i] = h
        }
        entries = list
        flat = flatBits
        let trackBytes = try bytes(.track)
        guard trackBytes.count % 2 == 0 else {
            throw DecodingError.dataCorruptedError(forKey: .track, in: c, debugDescription: "odd track")
        }
        track = trackBytes.map { Int8(bitPattern: $0) }
    }

    public func encode(to encoder: Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(version, forKey: .version)
        try c.encode(step, forKey: .step)
        try c.encode(duration, forKey: .duration)
        try c.encode(trackRate, forKey: .trackRate)
        var hashBytes = [UInt8](repeating: 0, count: entries.count * 8)
        for (i, e) in entries.enumerated() {
            guard let e else { continue }
            for b in 0..<8 { hashBytes[i * 8 + b] = UInt8(truncatingIfNeeded: e >> UInt64(8 * b)) }
        }
        try c.encode(Data(hashBytes).base64EncodedString(), forKey: .hashes)
        try c.encode(Data(Self.packBits(entries.map { $0 != nil })).base64EncodedString(), forKey: .present)
        try c.encode(Data(Self.packBits(flat)).base64EncodedString(), forKey: .flat)
        try c.encode(Data(phases).base64EncodedString(), forKey: .phases)
        try c.encode(Data(lumas).base64EncodedString(), forKey: .lumas)
        try c.encode(Data(track.map { UInt8(bitPattern: $0) }).base64EncodedString(), forKey: .track)
    }

    static func packBits(_ bits: [Bool]) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: (bits.count + 7) / 8)
        for (i, b) in bits.enumerated() where b { out[i / 8] |= 1 << UInt8(i % 8) }
        return out
    }

    static func unpackBits(_ bytes: [UInt8], count: Int) -> [Bool] {
        guard bytes.count == (count + 7) / 8 else { return [] }
        return (0..<count).map { bytes[$0 / 8] & (1 << UInt8($0 % 8)) != 0 }
    }
}

/// The dense track's coding: a coefficient c (luma levels) is stored as sign(c) sqrt(|c|) `scale`
/// (fine near zero, where most of a picture's motion shows, still ±60 levels at the ends).
public enum FingerprintTrack {
    /// Marks a grid cell without a frame.
    public static let missing = Int8.min
    public static let scale: Float = 16

    @inline(__always) public static func encode(_ value: Float) -> Int8 {
        let q = (value < 0 ? -1 : 1) * abs(value).squareRoot() * scale
        return Int8(max(-127, min(127, q.rounded())))
    }

    @inline(__always) public static func decode(_ code: Int8) -> Float {
        let r = Float(code) / scale
        return r < 0 ? -r * r : r * r
    }
}
