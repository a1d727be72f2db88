/// A range of source time, in seconds from the container's start: a shot, a range the highlight
/// must not show, a span of the analysis report.
public struct TimeRange: Sendable, Codable, Equatable, CustomStringConvertible {
    public var start: Double
    public var end: Double
    public init(start: Double, end: Double) { self.start = start; self.end = end }
    public var duration: Double { end - start }
    public var description: String { "\(Self.seconds(start))-\(Self.seconds(end))" }

    /// Seconds as a person reads them: "5", "2.5", "0.042" (at most three decimals).
    public static func seconds(_ value: Double) -> String {
        let rounded = (value * 1000).rounded() / 1000
        return rounded == rounded.rounded() ? String(Int(rounded)) : String(rounded)
    }

    /// Parses "5.0-10.0,20-25" (the CLI's --segments); a bound may be negative ("-3.0--0.7").
    public static func parseList(_ text: String) -> [TimeRange]? {
        var ranges: [TimeRange] = []
        for part in text.split(separator: ",") {
            let chars = Array(part)
            // The separator: a "-" after a digit or a point (a leading "-" is a sign).
            guard
                let dash = chars.indices.first(where: {
                    $0 > 0 && chars[$0] == "-" && (chars[$0 - 1].isNumber || chars[$0 - 1] == ".")
                }),
                let a = Double(String(chars[..<dash].filter { $0 != " " })),
                let b = Double(String(chars[(dash + 1)...].filter { $0 != " " }))
            else { return nil }
            ranges.append(TimeRange(start: a, end: b))
        }
        return ranges.isEmpty ? nil : ranges
    }

    /// `ranges` in time order, any two less than `gap` seconds apart (or overlapping) joined into
    /// one: decoding them separately would decode the frames between them anyway (each seek goes
    /// back to the keyframe before its range), some twice.
    public static func joined(_ ranges: [TimeRange], closerThan gap: Double) -> [TimeRange] {
        var out: [TimeRange] = []
        for r in ranges.sorted(by: { $0.start < $1.start }) {
            if let last = out.last, r.start - last.end < gap {
                out[out.count - 1].end = max(last.end, r.end)
            } else {
                out.append(r)
            }
        }
        return out
    }
}
