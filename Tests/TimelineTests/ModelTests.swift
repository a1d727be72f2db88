import MediaVocabulary
import Testing
@testable import Timeline

@Suite("Timeline model")
struct ModelTests {
    @Test(
        "measured fps snaps to the standard rate",
        arguments: [
            (23.976, 24000, 1001), (23.98, 24000, 1001), (24.0, 24, 1), (25.0, 25, 1), (29.97, 30000, 1001),
            (29.968, 30000, 1001), (30.0, 30, 1), (48.0, 48, 1), (50.0, 50, 1), (59.94, 60000, 1001),
            (60.0, 60, 1), (119.88, 120000, 1001), (120.0, 120, 1), (240.1, 240, 1)
        ])
    func nearest(fps: Double, numerator: Int, denominator: Int) {
        #expect(TimelineRate.nearest(to: fps) == TimelineRate(numerator: numerator, denominator: denominator))
    }

    @Test("other rates become a rational approximation")
    func approximation() {
        #expect(TimelineRate.nearest(to: 7.5) == TimelineRate(numerator: 15, denominator: 2))
        #expect(TimelineRate.nearest(to: 18) == TimelineRate(numerator: 18, denominator: 1))
        let odd = TimelineRate.nearest(to: 33.3333333)
        #expect(odd == TimelineRate(numerator: 100, denominator: 3))
        #expect(TimelineRate.nearest(to: .nan) == TimelineRate(numerator: 30, denominator: 1))
        #expect(TimelineRate.nearest(to: -5) == TimelineRate(numerator: 30, denominator: 1))
    }

    @Test("frames are rounded once per clip and the dissolve is capped at half the shortest clip")
    func plan() {
        let doc = Fixtures.ntsc(crossfade: 0.25)
        let plan = TimelinePlan(doc)
        #expect(plan.clips.map { [$0.sourceIn, $0.sourceOut] } == [[96, 237], [1230, 1397], [2637, 2851]])
        #expect(plan.transitionFrames == 7)  // 0.25 s * 29.97 = 7.49
        #expect(plan.totalFrames == (237 - 96) + (1397 - 1230) + (2851 - 2637) - 2 * 7)
        #expect(plan.clips[1].recordIn == plan.clips[0].recordOut - 7)
        var short = doc
        short.clips[1] = clip(41.0, 41.3)  // 9 frames
        short.crossfadeSeconds = 2
        #expect(TimelinePlan(short).transitionFrames == 4)
        var single = doc
        single.clips = [doc.clips[0]]
        #expect(TimelinePlan(single).transitionFrames == 0)
        #expect(TimelinePlan(single).totalFrames == 141)
    }

    @Test("hostile header rates do not trap: absurd rates fall back to 30, continued fractions stop before overflowing")
    func hostileRates() {
        for fps in [1033727416.0 / 4096, 1934186715.0 / 512, 1e300, Double.greatestFiniteMagnitude, 1000.0000001] {
            #expect(TimelineRate.nearest(to: fps) == TimelineRate(numerator: 30, denominator: 1), "\(fps)")
        }
        for fps in [999.999999999, 7.000000000001, 1.0 / 3, 0.5000000000001, 4.9e-324] {
            let rate = TimelineRate.nearest(to: fps)
            #expect(rate.denominator >= 1 && rate.denominator <= 1001 && rate.numerator >= 1, "\(fps) -> \(rate)")
        }
    }

    @Test("degenerate input does not trap")
    func degenerate() throws {
        var doc = Fixtures.pal
        doc.rate = TimelineRate(numerator: 0, denominator: 0)
        doc.clips = [
            clip(.nan, -3, crop: CropWindow(x: .infinity, y: 0, width: 2, height: -1)),
            clip(5, 5)
        ]
        doc.sourceWidth = 0
        for format in TimelineFormat.allCases {
            #expect(!TimelineExport.render(doc, as: format).isEmpty)
        }
        let plan = TimelinePlan(doc)
        #expect(plan.rate == TimelineRate(numerator: 30, denominator: 1))
        #expect(plan.clips.allSatisfy { $0.frames >= 1 })
        doc.clips = []
        #expect(try TimelineParse.edl(TimelineExport.render(doc, as: .edl)).isEmpty)
        #expect(try TimelineParse.fcpxml(TimelineExport.render(doc, as: .fcpxml)).isEmpty)
    }

    @Test("media types and extensions")
    func formats() {
        #expect(TimelineFormat.fcpxml.mediaType == "application/xml")
        #expect(TimelineFormat.otio.mediaType == "application/json")
        #expect(TimelineFormat.edl.mediaType == "text/plain; charset=utf-8")
        #expect(TimelineFormat.allCases.map(\.fileExtension) == ["fcpxml", "otio", "edl"])
        #expect(TimelineFormat(rawValue: "otio") == .otio)
    }

    @Test("file names are escaped for each syntax")
    func escaping() {
        #expect(TextEscaping.xmlAttribute(Fixtures.tricky) == "&quot;Beach &amp; Sun &lt;2026&gt;&quot; ünïcode.mov")
        #expect(
            TextEscaping.fileURL(forName: Fixtures.tricky)
                == "file:///%22Beach%20%26%20Sun%20%3C2026%3E%22%20%C3%BCn%C3%AFcode.mov")
        #expect(TextEscaping.fileURL(forName: "a/b?c#d.mov") == "file:///a%2Fb%3Fc%23d.mov")
        #expect(TextEscaping.jsonString("a\"b\\c\nd\u{1}") == "\"a\\\"b\\\\c\\nd\\u0001\"")
        #expect(TextEscaping.reelName(forFileName: "IMG_0042.MOV") == "IMG_0042")
        #expect(TextEscaping.reelName(forFileName: Fixtures.tricky) == "BEACHSUN")
        #expect(TextEscaping.reelName(forFileName: "ünï.mov") == "N")
        #expect(TextEscaping.reelName(forFileName: "日本.mov") == "AX")
        #expect(TextEscaping.edlLine("a\nb\rc") == "a b c")
    }
}
