import MediaVocabulary
import Foundation
import MomentsConfig
import Store

/// What a client asks of a highlight: its length, quality and the creative choices (`edit`:
/// aspect, pinned and excluded moments), validated here for every way they arrive: the upload's
/// form fields, tus metadata and IETF query parameters (`parse(fields:)`), and a re-cut's JSON
/// over the original's choices (`recut(_:of:)`). The pins and exclusions are checked against the
/// video's length once it is known (`EditRequest.check`).
public struct HighlightOptions: Sendable, Equatable {
    public var targetDuration: Int
    public var quality: HighlightQuality
    public var edit: EditRequest

    /// The server's range and default of target_duration.
    public struct Limits: Sendable, Equatable {
        public var minTargetDuration: Int, maxTargetDuration: Int, defaultTargetDuration: Int

        public init(minTargetDuration: Int, maxTargetDuration: Int, defaultTargetDuration: Int) {
            self.minTargetDuration = minTargetDuration; self.maxTargetDuration = maxTargetDuration
            self.defaultTargetDuration = defaultTargetDuration
        }
    }

    public init(targetDuration: Int, quality: HighlightQuality = .default, edit: EditRequest = EditRequest()) {
        self.targetDuration = targetDuration; self.quality = quality; self.edit = edit
    }

    /// From text fields: target_duration, quality, aspect, include and exclude, each optional.
    public static func parse(fields: [String: String], limits: Limits) throws(Refusal) -> HighlightOptions {
        var target = limits.defaultTargetDuration
        if let text = fields["target_duration"] {
            guard let value = Int(text) else { throw .targetDurationNotANumber(text) }
            target = value
        }
        try check(target: target, limits: limits, listsAllowed: true)
        var quality = HighlightQuality.default
        if let text = fields["quality"] {
            guard let value = HighlightQuality(rawValue: text.lowercased()) else {
                throw .invalidQuality(text, listsAllowed: true)
            }
            quality = value
        }
        let edit = try EditRequest.parse(
            aspect: fields["aspect"], include: fields["include"],
            exclude: fields["exclude"], focus: fields["focus"])
        return HighlightOptions(targetDuration: target, quality: quality, edit: edit)
    }

    /// A re-cut's options: what the request changes over the original job's choices, checked
    /// against the original video.
    public static func recut(
        _ request: RecutRequest, of original: Job,
        limits: Limits
    ) throws(Refusal) -> HighlightOptions {
        let base = original.edit ?? JobEdit()
        let target = request.targetDuration ?? original.targetDuration
        try check(target: target, limits: limits, listsAllowed: false)
        guard let quality = request.quality.map({ HighlightQuality(rawValue: $0.lowercased()) }) ?? original.quality
        else {
            throw .invalidQuality(request.quality ?? "", listsAllowed: false)
        }
        var edit = EditRequest(
            aspect: try request.aspect.map(EditRequest.parseAspect) ?? base.aspect,
            include: request.include ?? base.include, exclude: request.exclude ?? base.exclude,
            focus: try request.focus.map(EditRequest.parseFocus) ?? base.focus ?? .auto)
        edit.include = edit.include.filter { $0.isFinite }
        let validRanges = edit.exclude.allSatisfy {
            $0.start.isFinite && $0.end.isFinite && $0.start >= 0 && $0.end > $0.start
        }
        guard edit.include.allSatisfy({ $0 >= 0 }), validRanges else { throw .invalidExclude(.badRange) }
        try edit.check(duration: original.input.duration, targetDuration: target)
        return HighlightOptions(targetDuration: target, quality: quality, edit: edit)
    }

    static func check(target: Int, limits: Limits, listsAllowed: Bool) throws(Refusal) {
        guard target >= limits.minTargetDuration && target <= limits.maxTargetDuration else {
            throw .targetDurationOutOfRange(
                target, minimum: limits.minTargetDuration,
                maximum: limits.maxTargetDuration, listsAllowed: listsAllowed)
        }
    }
}

extension ServiceSettings {
    /// The target_duration range and default highlights are checked against.
    public var highlightLimits: HighlightOptions.Limits {
        HighlightOptions.Limits(
            minTargetDuration: minTargetDuration, maxTargetDuration: maxTargetDuration,
            defaultTargetDuration: defaultTargetDuration)
    }
}
