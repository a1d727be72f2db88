import MediaVocabulary
import Foundation
import Store

/// The creative parameters of an upload or a re-cut, as a client sends them: `aspect`, `include`
/// (pinned times) and `exclude` (ranges), parsed from form fields, tus metadata, query parameters
/// or JSON, and checked against the video once its length is known.
public struct EditRequest: Sendable, Equatable {
    public var aspect: AspectRatio = .source
    public var include: [Double] = []
    public var exclude: [TimeRange] = []
    /// What the highlight favours: people first (auto), people, or action.
    public var focus: HighlightFocus = .auto

    /// Most pinned times and excluded ranges one highlight takes.
    public static let maxPins = 10
    public static let maxExclusions = 20
    /// Seconds a pinned time keeps from every excluded range.
    public static let pinClearance = 0.25

    public init(
        aspect: AspectRatio = .source, include: [Double] = [], exclude: [TimeRange] = [], focus: HighlightFocus = .auto
    ) {
        self.aspect = aspect; self.include = include; self.exclude = exclude; self.focus = focus
    }

    /// From text fields: `aspect=9:16`, `include=12.5,40`, `exclude=10-20,30.5-35` (JSON arrays
    /// are taken too: `[12.5, 40]`, `[[10, 20]]` or `[{"start": 10, "end": 20}]`).
    public static func parse(aspect: String?, include: String?, exclude: String?, focus: String? = nil)
        throws(Refusal) -> EditRequest
    {
        var edit = EditRequest()
        if let aspect = aspect?.trimmingCharacters(in: .whitespaces), !aspect.isEmpty {
            edit.aspect = try parseAspect(aspect)
        }
        if let focus = focus?.trimmingCharacters(in: .whitespaces), !focus.isEmpty {
            edit.focus = try parseFocus(focus)
        }
        if let include = include?.trimmingCharacters(in: .whitespaces), !include.isEmpty {
            edit.include = try parseTimes(include)
        }
        if let exclude = exclude?.trimmingCharacters(in: .whitespaces), !exclude.isEmpty {
            edit.exclude = try parseRanges(exclude)
        }
        try edit.checkCounts()
        return edit
    }

    public static func parseAspect(_ text: String) throws(Refusal) -> AspectRatio {
        guard let aspect = AspectRatio(rawValue: text.lowercased()) else {
            throw .invalidAspect(text)
        }
        return aspect
    }

    public static func parseFocus(_ text: String) throws(Refusal) -> HighlightFocus {
        guard let focus = HighlightFocus(rawValue: text.lowercased()) else { throw .invalidFocus(text) }
        return focus
    }

    static func parseTimes(_ text: String) throws(Refusal) -> [Double] {
        let invalid = Refusal.invalidInclude(.malformed)
        var values: [Double] = []
        if text.hasPrefix("[") {
            guard let array = (try? JSONSerialization.jsonObject(with: Data(text.utf8))) as? [Any] else {
                throw invalid
            }
            for item in array {
                guard let number = jsonNumber(item) else { throw invalid }
                values.append(number)
            }
        } else {
            for part in text.split(separator: ",", omittingEmptySubsequences: false) {
                guard let value = Double(part.trimmingCharacters(in: .whitespaces)) else { throw invalid }
                values.append(value)
            }
        }
        guard values.allSatisfy({ $0.isFinite && $0 >= 0 }) else { throw invalid }
        return values
    }

    static func parseRanges(_ text: String) throws(Refusal) -> [TimeRange] {
        let invalid = Refusal.invalidExclude(.malformed)
        var ranges: [TimeRange] = []
        if text.hasPrefix("[") {
            guard let array = (try? JSONSerialization.jsonObject(with: Data(text.utf8))) as? [Any] else {
                throw invalid
            }
            for item in array {
                if let pair = item as? [Any], pair.count == 2, let a = jsonNumber(pair[0]), let b = jsonNumber(pair[1])
                {
                    ranges.append(TimeRange(start: a, end: b))
                } else if let object = item as? [String: Any], let a = object["start"].flatMap(jsonNumber),
                    let b = object["end"].flatMap(jsonNumber)
                {
                    ranges.append(TimeRange(start: a, end: b))
                } else {
                    throw invalid
                }
            }
        } else {
            for part in text.split(separator: ",", omittingEmptySubsequences: false) {
                // "10-20" (a minus sign is not valid in a time, so the first '-' separates).
                let bounds = part.split(separator: "-", maxSplits: 1).map {
                    Double($0.trimmingCharacters(in: .whitespaces))
                }
                guard bounds.count == 2, let start = bounds[0], let end = bounds[1] else { throw invalid }
                ranges.append(TimeRange(start: start, end: end))
            }
        }
        guard ranges.allSatisfy({ $0.start.isFinite && $0.end.isFinite && $0.start >= 0 && $0.end > $0.start }) else {
            throw invalid
        }
        return ranges
    }

    /// A JSON number as JSONSerialization gives it, and not a JSON true/false (which Foundation on
    /// Linux also hands out as NSNumber, and which `is Bool` cannot tell from 1 and 0).
    public static func jsonNumber(_ value: Any) -> Double? {
        guard let number = value as? NSNumber, !String(describing: type(of: value)).contains("Boolean") else {
            return nil
        }
        return number.doubleValue
    }

    func checkCounts() throws(Refusal) {
        if include.count > Self.maxPins {
            throw .invalidInclude(.tooMany(include.count))
        }
        if exclude.count > Self.maxExclusions {
            throw .invalidExclude(.tooMany(exclude.count))
        }
    }

    /// Checks the times against the video's length and the target: every pinned time inside the
    /// video and outside every excluded range, the pins fitting the target, footage left to show.
    public func check(duration: Double, targetDuration: Int, minSegment: Double = 1.5) throws(Refusal) {
        try checkCounts()
        for t in include where t >= duration {
            throw .invalidInclude(.pastEnd(time: t, duration: duration))
        }
        for t in include {
            // A pinned segment needs a little footage around its time: a pin within a quarter second
            // of an excluded range counts as inside it.
            if let range = exclude.first(where: { t >= $0.start - Self.pinClearance && t <= $0.end + Self.pinClearance }
            ) {
                throw .invalidInclude(.nearExclusion(time: t, range: range))
            }
        }
        if Double(Set(include).count) * minSegment > Double(targetDuration) {
            throw .invalidInclude(.doNotFit(pins: Set(include).count, targetDuration: targetDuration))
        }
        // Footage left once the exclusions are taken out.
        var covered = 0.0, reach = 0.0
        for r in exclude.sorted(by: { $0.start < $1.start }) {
            let start = max(r.start, reach), end = min(r.end, duration)
            if end > start { covered += end - start }
            reach = max(reach, r.end)
        }
        if duration - covered < minSegment {
            throw .invalidExclude(.leavesNothing)
        }
    }

    /// The client's choice as stored with a resumable upload (nil: a plain highlight).
    public init(_ stored: JobEdit?) {
        aspect = stored?.aspect ?? .source
        include = stored?.include ?? []
        exclude = stored?.exclude ?? []
        focus = stored?.focus ?? .auto
    }

    /// A client's file name as a label: its last path component, control characters dropped, at
    /// most 255 bytes; nil when nothing is left. Never used as a path.
    public static func displayName(_ raw: String) -> String? {
        let last = raw.split(whereSeparator: { $0 == "/" || $0 == "\\" }).last.map(String.init) ?? ""
        var name = String(
            String.UnicodeScalarView(last.unicodeScalars.filter { !CharacterSet.controlCharacters.contains($0) })
        )
        .trimmingCharacters(in: .whitespaces)
        while name.utf8.count > 255 { name.removeLast() }
        return name.isEmpty || name == "." || name == ".." ? nil : name
    }

    /// The stored form, with what the job needs beyond the client's choice.
    public func job(sourceName: String?, recutOf: String? = nil, keepsInput: Bool) -> JobEdit {
        var edit = JobEdit(
            aspect: aspect, include: include, exclude: exclude, sourceName: sourceName, recutOf: recutOf,
            keepsInput: keepsInput)
        edit.focus = focus == .auto ? nil : focus
        return edit
    }
}
