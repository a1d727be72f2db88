import Foundation
import MediaVocabulary
@testable import Requests
import Store
import Testing

/// The one validation of a highlight's options: text fields (multipart, tus metadata, IETF query)
/// and a re-cut over the original's choices.
@Suite("Highlight options")
struct HighlightOptionsTests {
    static let limits = HighlightOptions.Limits(minTargetDuration: 5, maxTargetDuration: 180, defaultTargetDuration: 30)

    static func parse(_ fields: [String: String]) -> Result<HighlightOptions, Refusal> {
        Result { () throws(Refusal) in try HighlightOptions.parse(fields: fields, limits: limits) }
    }

    @Test func defaultsAndCaseInsensitiveQuality() throws {
        #expect(try Self.parse([:]).get() == HighlightOptions(targetDuration: 30, quality: .high))
        let options = try Self.parse([
            "target_duration": "60", "quality": "LOW", "aspect": "9:16", "include": "12.5,40",
            "exclude": "[[1, 2]]"
        ]).get()
        #expect(options.targetDuration == 60)
        #expect(options.quality == .low)
        let edit = EditRequest(aspect: .portrait, include: [12.5, 40], exclude: [TimeRange(start: 1, end: 2)])
        #expect(options.edit == edit)
    }

    @Test func focusIsParsedStoredAndKeptByRecuts() throws {
        #expect(try Self.parse([:]).get().edit.focus == .auto)
        let people = try Self.parse(["focus": "People"]).get()
        #expect(people.edit.focus == .people)
        // Stored as the job's edit (auto is the absence of a choice) and read back.
        let stored = people.edit.job(sourceName: nil, keepsInput: true)
        #expect(stored.focus == .people)
        #expect(EditRequest(stored).focus == .people)
        #expect(EditRequest(try Self.parse([:]).get().edit.job(sourceName: nil, keepsInput: true)).focus == .auto)
        // A re-cut keeps the original's focus unless it names one.
        var original = Self.original()
        original.edit?.focus = .action
        let kept = try HighlightOptions.recut(RecutRequest(), of: original, limits: Self.limits)
        #expect(kept.edit.focus == .action)
        var request = RecutRequest()
        request.focus = "people"
        #expect(try HighlightOptions.recut(request, of: original, limits: Self.limits).edit.focus == .people)
    }

    @Test func refusesEachFieldAsBefore() {
        #expect(Self.parse(["target_duration": "ten"]) == .failure(.targetDurationNotANumber("ten")))
        let short = Refusal.targetDurationOutOfRange(4, minimum: 5, maximum: 180, listsAllowed: true)
        #expect(Self.parse(["target_duration": "4"]) == .failure(short))
        #expect(Self.parse(["target_duration": "181"]).isFailure)
        #expect(Self.parse(["target_duration": "5"]).isFailure == false)
        #expect(Self.parse(["quality": "ultra"]) == .failure(.invalidQuality("ultra", listsAllowed: true)))
        #expect(Self.parse(["aspect": "2:1"]) == .failure(.invalidAspect("2:1")))
        #expect(Self.parse(["focus": "faces"]) == .failure(.invalidFocus("faces")))
        #expect(Self.parse(["include": "x"]) == .failure(.invalidInclude(.malformed)))
        #expect(Self.parse(["exclude": "20-10"]) == .failure(.invalidExclude(.malformed)))
        let pins = (0...EditRequest.maxPins).map(String.init).joined(separator: ",")
        #expect(Self.parse(["include": pins]) == .failure(.invalidInclude(.tooMany(EditRequest.maxPins + 1))))
        // The target is checked before the quality, as the upload always did.
        #expect(Self.parse(["target_duration": "1", "quality": "ultra"]).failure?.code == "invalid_target_duration")
    }

    static func original(
        quality: HighlightQuality = .medium, edit: JobEdit? = JobEdit(aspect: .square, include: [10])
    ) -> Job {
        let input = JobInput(
            size: 1_000_000, duration: 60, container: "mp4", videoCodec: "h264", audioCodec: nil,
            width: 1920, height: 1080, rotation: 0, frameRate: 30)
        var job = Job(
            id: "original", accountId: "a", targetDuration: 20, quality: quality, input: input,
            estimatedSeconds: 10, now: Date())
        job.edit = edit
        return job
    }

    static func recut(_ request: RecutRequest) -> Result<HighlightOptions, Refusal> {
        Result { () throws(Refusal) in try HighlightOptions.recut(request, of: original(), limits: limits) }
    }

    @Test func recutKeepsTheOriginalsChoicesItDoesNotChange() throws {
        let same = try Self.recut(RecutRequest()).get()
        #expect(
            same
                == HighlightOptions(
                    targetDuration: 20, quality: .medium,
                    edit: EditRequest(aspect: .square, include: [10])))
        let request = RecutRequest(targetDuration: 40, quality: "HIGH", aspect: "9:16", include: [], exclude: [])
        let changed = try Self.recut(request).get()
        #expect(changed == HighlightOptions(targetDuration: 40, quality: .high, edit: EditRequest(aspect: .portrait)))
    }

    @Test func recutRefusesWithoutTheFigures() {
        let long = Refusal.targetDurationOutOfRange(900, minimum: 5, maximum: 180, listsAllowed: false)
        #expect(Self.recut(RecutRequest(targetDuration: 900)) == .failure(long))
        #expect(Self.recut(RecutRequest(quality: "ultra")) == .failure(.invalidQuality("ultra", listsAllowed: false)))
        #expect(Self.recut(RecutRequest(exclude: [TimeRange(start: 5, end: 1)])) == .failure(.invalidExclude(.badRange)))
        #expect(Self.recut(RecutRequest(include: [70])) == .failure(.invalidInclude(.pastEnd(time: 70, duration: 60))))
        #expect(
            Self.recut(RecutRequest(exclude: [TimeRange(start: 0, end: 60)]))
                == .failure(
                    .invalidInclude(
                        .nearExclusion(time: 10, range: TimeRange(start: 0, end: 60)))))
        let everything = RecutRequest(include: [], exclude: [TimeRange(start: 0, end: 60)])
        #expect(Self.recut(everything) == .failure(.invalidExclude(.leavesNothing)))
        #expect(Refusal.targetDurationOutOfRange(900, minimum: 5, maximum: 180, listsAllowed: false).extras.isEmpty)
    }
}

private extension Result {
    var isFailure: Bool { if case .failure = self { true } else { false } }
    var failure: Failure? { if case .failure(let error) = self { error } else { nil } }
}
