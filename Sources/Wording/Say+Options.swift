import Foundation
import MediaVocabulary

/// A highlight's options: target_duration, quality, aspect, focus, include, exclude.
extension Say {
    public static func targetDurationNotANumber(_ text: String) -> String {
        "target_duration must be a whole number of seconds, not \"\(text)\"."
    }
    public static let targetDurationNotWhole = "target_duration must be a whole number of seconds."
    public static func targetDurationOutOfRange(_ value: Int, minimum: Int, maximum: Int) -> String {
        "target_duration must be between \(minimum) and \(maximum) seconds; it was \(value)."
    }

    static var qualities: String {
        let names = HighlightQuality.allCases.map(\.rawValue)
        return names.dropLast().joined(separator: ", ") + " or " + (names.last ?? "")
    }
    public static func invalidQuality(_ given: String) -> String { "quality must be \(qualities); it was \"\(given)\"." }
    public static var qualityNotAString: String { "quality must be \(qualities)." }

    public static func invalidAspect(_ given: String) -> String {
        let choices = AspectRatio.allCases.map(\.rawValue).joined(separator: ", ")
        return "aspect must be one of \(choices); it was \"\(given.prefix(40))\"."
    }
    public static let aspectNotAString = "aspect must be a string such as \"9:16\"."
    public static func invalidFocus(_ given: String) -> String {
        "focus must be auto (people first where there are any), people or action; it was \"\(given.prefix(40))\"."
    }

    public static let includeMalformed =
        "include lists the source times (seconds) that must be in the highlight: \"12.5,40\" or [12.5, 40]."
    public static func includeTooMany(_ count: Int, limit: Int) -> String {
        "include takes at most \(limit) times; it had \(count)."
    }
    public static func pinPastEnd(time: Double, duration: Double) -> String {
        String(format: "The pinned time %.1f s is past the end of the video (%.1f s).", time, duration)
    }
    public static func pinNearExclusion(time: Double, clearance: Double, start: Double, end: Double) -> String {
        String(
            format: "The pinned time %.2f s is inside (or within %.2f s of) the excluded range "
                + "%.2f-%.2f s; move or remove one of them.",
            time, clearance, start, end)
    }
    public static func pinsDoNotFit(_ pins: Int, targetDuration: Int) -> String {
        "\(pins) pinned times do not fit a \(targetDuration) s highlight; pin fewer or ask for a longer one."
    }

    public static let excludeMalformed =
        "exclude lists source ranges (seconds) never to show: \"10-20,30-35\", [[10, 20]] or "
        + "[{\"start\": 10, \"end\": 20}], each start before its end."
    public static let excludeNotAList = "exclude must be a list of ranges."
    public static let excludeBadRange =
        "Times are seconds of the original video: no negative time, every range's start before its end."
    public static func excludeTooMany(_ count: Int, limit: Int) -> String {
        "exclude takes at most \(limit) ranges; it had \(count)."
    }
    public static let excludeLeavesNothing = "exclude leaves no footage to make a highlight of."
}
