import FFmpeg
@_exported import MediaVocabulary

/// Where the crop window is over one segment: its centre (fractions of the displayed picture) at
/// source times; linear in between, held before the first and after the last.
public struct CropTrack: Sendable, Codable, Equatable {
    public var times: [Double]
    public var x: [Double]
    public var y: [Double]

    public init(times: [Double], x: [Double], y: [Double]) {
        self.times = times; self.x = x; self.y = y
    }

    /// A window that stays put.
    public static func steady(at time: Double, x: Double, y: Double) -> CropTrack {
        CropTrack(times: [time], x: [x], y: [y])
    }

    /// The centre at source time `t`.
    public func center(at t: Double) -> (x: Double, y: Double) {
        guard let first = times.first, !x.isEmpty, !y.isEmpty, x.count == times.count, y.count == times.count else {
            return (0.5, 0.5)
        }
        if t <= first { return (x[0], y[0]) }
        if t >= times[times.count - 1] { return (x[x.count - 1], y[y.count - 1]) }
        // Binary search for the interval holding t.
        var lo = 0, hi = times.count - 1
        while hi - lo > 1 {
            let mid = (lo + hi) / 2
            if times[mid] <= t { lo = mid } else { hi = mid }
        }
        let span = times[hi] - times[lo]
        let f = span > 0 ? (t - times[lo]) / span : 0
        return (x[lo] + (x[hi] - x[lo]) * f, y[lo] + (y[hi] - y[lo]) * f)
    }
}

/// A reframed render: a window of fixed size (fractions of the displayed picture) whose centre
/// follows one track per segment of the edit.
public struct Reframe: Sendable, Codable, Equatable {
    public var aspect: AspectRatio
    public var width: Double
    public var height: Double
    public var tracks: [CropTrack]

    public init(aspect: AspectRatio, width: Double, height: Double, tracks: [CropTrack]) {
        self.aspect = aspect; self.width = width; self.height = height; self.tracks = tracks
    }

    /// The output's displayed size for a source displayed at `width`×`height`: the window scaled
    /// so its shorter side is the quality's short side (or the source's, if smaller), even sizes.
    /// 9:16 from 1080p landscape at 1080p quality: 1080×1920.
    public func outputSize(displayWidth width: Int, height: Int, maxShortSide: Int) -> (width: Int, height: Int) {
        let cropW = self.width * Double(width), cropH = self.height * Double(height)
        let short = Double(min(maxShortSide, min(width, height)))
        let scale = short / max(1, min(cropW, cropH))
        return (max(2, Int((cropW * scale / 2).rounded()) * 2), max(2, Int((cropH * scale / 2).rounded()) * 2))
    }
}

/// Turns a reframe's displayed-picture fractions into stored-picture pixels (the output keeps the
/// source's rotation as display metadata, so the crop is taken from the stored picture).
package struct StoredCrop {
    package let codedWidth: Int
    package let codedHeight: Int
    package let rotation: Int
    /// Crop size in stored pixels.
    package let width: Int
    package let height: Int
    /// Chroma alignment of the crop's origin.
    package let alignment = 2

    package init(reframe: Reframe, codedWidth: Int, codedHeight: Int, rotation: Int) {
        self.codedWidth = codedWidth
        self.codedHeight = codedHeight
        self.rotation = ((rotation % 360) + 360) % 360
        let sideways = self.rotation == 90 || self.rotation == 270
        // The window's fractions along the stored axes.
        let fw = sideways ? reframe.height : reframe.width
        let fh = sideways ? reframe.width : reframe.height
        width = max(2, min(codedWidth, Int((fw * Double(codedWidth) / 2).rounded(.down)) * 2))
        height = max(2, min(codedHeight, Int((fh * Double(codedHeight) / 2).rounded(.down)) * 2))
    }

    /// The stored-pixel window whose centre shows at display fractions (`x`, `y`).
    package func rect(centerX x: Double, centerY y: Double) -> CropRect {
        let (u, v): (Double, Double)
        switch rotation {
        case 90: (u, v) = (y, 1 - x)
        case 180: (u, v) = (1 - x, 1 - y)
        case 270: (u, v) = (1 - y, x)
        default: (u, v) = (x, y)
        }
        func origin(_ center: Double, _ size: Int, _ total: Int) -> Int {
            let c = center.isFinite ? center : 0.5
            let raw = Int((c * Double(total) - Double(size) / 2).rounded())
            let clamped = min(max(0, raw), total - size)
            return clamped / alignment * alignment
        }
        return CropRect(
            x: origin(u, width, codedWidth), y: origin(v, height, codedHeight), width: width, height: height)
    }
}
