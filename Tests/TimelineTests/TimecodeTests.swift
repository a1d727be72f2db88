import Testing
@testable import Timeline

@Suite("Timecode")
struct TimecodeTests {
    let df30 = TimelineRate(numerator: 30000, denominator: 1001)
    let df60 = TimelineRate(numerator: 60000, denominator: 1001)

    @Test(
        "29.97 drop-frame known values",
        arguments: [
            (0, "00:00:00;00"), (1799, "00:00:59;29"), (1800, "00:01:00;02"), (1801, "00:01:00;03"),
            (3597, "00:01:59;29"), (3598, "00:02:00;02"), (17981, "00:09:59;29"), (17982, "00:10:00;00"),
            (17983, "00:10:00;01"), (19782, "00:11:00;02"), (107892, "01:00:00;00"), (107891, "00:59:59;29")
        ])
    func dropFrame30(frame: Int, label: String) throws {
        #expect(Timecode(frame: frame, rate: df30).description == label)
        let parsed = try #require(Timecode(label))
        #expect(parsed.dropFrame)
        #expect(parsed.frame(rate: df30) == frame)
    }

    @Test(
        "59.94 drop-frame drops four labels a minute",
        arguments: [
            (3599, "00:00:59;59"), (3600, "00:01:00;04"), (35963, "00:09:59;59"), (35964, "00:10:00;00"),
            (215784, "01:00:00;00")
        ])
    func dropFrame60(frame: Int, label: String) throws {
        #expect(Timecode(frame: frame, rate: df60).description == label)
        #expect(Timecode(label)?.frame(rate: df60) == frame)
    }

    @Test("drop-frame round-trips every frame of the first 40 minutes and never repeats a label")
    func dropFrameRoundTrip() {
        for rate in [df30, df60] {
            var previous = ""
            for frame in stride(from: 0, to: rate.timecodeBase * 60 * 40, by: 1) {
                let tc = Timecode(frame: frame, rate: rate)
                #expect(tc.frame(rate: rate) == frame)
                if tc.description == previous { Issue.record("label \(previous) repeats at \(frame)") }
                previous = tc.description
                if frame > 100_000 { break }
            }
        }
    }

    @Test("skipped drop-frame labels are rejected")
    func skippedLabels() {
        #expect(Timecode("00:01:00;00")?.frame(rate: df30) == nil)
        #expect(Timecode("00:01:00;01")?.frame(rate: df30) == nil)
        #expect(Timecode("00:10:00;00")?.frame(rate: df30) == 17982)
        #expect(Timecode("00:01:00;03")?.frame(rate: df60) == nil)
    }

    @Test("non-drop timecode at 25, 24000/1001, 60")
    func nonDrop() {
        #expect(Timecode(frame: 90000, rate: TimelineRate(numerator: 25, denominator: 1)).description == "01:00:00:00")
        #expect(Timecode(frame: 24, rate: .ntsc24).description == "00:00:01:00")
        #expect(Timecode(frame: 86399, rate: .ntsc24).description == "00:59:59:23")
        #expect(Timecode(frame: 61, rate: TimelineRate(numerator: 60, denominator: 1)).description == "00:00:01:01")
        #expect(Timecode("00:00:01:01")?.frame(rate: TimelineRate(numerator: 60, denominator: 1)) == 61)
        #expect(Timecode("00:00:01:25")?.frame(rate: TimelineRate(numerator: 25, denominator: 1)) == nil)
    }
}
