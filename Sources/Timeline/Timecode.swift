import Foundation

/// SMPTE timecode for a frame count at a rate: `HH:MM:SS:FF`, or `HH:MM:SS;FF` drop-frame at
/// 29.97 and 59.94 fps.
///
/// Drop-frame skips timecode labels, never frames: at 29.97 the labels `;00` and `;01` (four
/// labels `;00`–`;03` at 59.94) are left out at the start of every minute except minutes
/// divisible by ten, which keeps the label within 0.1 frame of wall-clock time per 10 minutes.
public struct Timecode: Sendable, Equatable, CustomStringConvertible {
    public var hours: Int
    public var minutes: Int
    public var seconds: Int
    public var frames: Int
    public var dropFrame: Bool

    public init(hours: Int, minutes: Int, seconds: Int, frames: Int, dropFrame: Bool) {
        self.hours = hours
        self.minutes = minutes
        self.seconds = seconds
        self.frames = frames
        self.dropFrame = dropFrame
    }

    /// The timecode of frame `frame` (counted from 00:00:00:00) at `rate`. Drop-frame when the rate
    /// is 30000/1001 or 60000/1001. Negative frames count as 0; hours are not wrapped at 24.
    public init(frame: Int, rate: TimelineRate) {
        let base = rate.timecodeBase
        let drop = rate.isDropFrame
        var n = max(0, frame)
        if drop {
            let dropped = base / 15  // 2 labels at 30, 4 at 60
            let perTenMinutes = base * 600 - dropped * 9
            let perMinute = base * 60 - dropped
            let tens = n / perTenMinutes
            let rest = n % perTenMinutes
            // The first minute of each ten has all its labels; later ones lose `dropped` each.
            n += dropped * 9 * tens
            if rest >= dropped { n += dropped * ((rest - dropped) / perMinute) }
        }
        frames = n % base
        seconds = (n / base) % 60
        minutes = (n / (base * 60)) % 60
        hours = n / (base * 3600)
        dropFrame = drop
    }

    /// Parses `HH:MM:SS:FF`; `;` (or `.`) before the frames marks drop-frame.
    public init?(_ text: String) {
        let parts = text.split(whereSeparator: { $0 == ":" || $0 == ";" || $0 == "." }).map(String.init)
        guard parts.count == 4, let h = Int(parts[0]), let m = Int(parts[1]), let s = Int(parts[2]),
            let f = Int(parts[3]), h >= 0, (0..<60).contains(m), (0..<60).contains(s), f >= 0
        else { return nil }
        let separator = text.index(text.endIndex, offsetBy: -(parts[3].count + 1), limitedBy: text.startIndex)
        let drop = separator.map { text[$0] == ";" || text[$0] == "." } ?? false
        self.init(hours: h, minutes: m, seconds: s, frames: f, dropFrame: drop)
    }

    /// The frame count this timecode labels at `rate` (the inverse of `init(frame:rate:)`); nil
    /// when the frames field is out of range or names a label drop-frame skips.
    public func frame(rate: TimelineRate) -> Int? {
        let base = rate.timecodeBase
        guard frames < base else { return nil }
        let totalMinutes = hours * 60 + minutes
        var n = (totalMinutes * 60 + seconds) * base + frames
        if dropFrame {
            let dropped = base / 15
            guard dropped > 0 else { return nil }
            if seconds == 0, frames < dropped, minutes % 10 != 0 { return nil }
            n -= dropped * (totalMinutes - totalMinutes / 10)
        }
        return n
    }

    public var description: String {
        func two(_ v: Int) -> String { v < 10 ? "0\(v)" : "\(v)" }
        return "\(two(hours)):\(two(minutes)):\(two(seconds))\(dropFrame ? ";" : ":")\(two(frames))"
    }
}
