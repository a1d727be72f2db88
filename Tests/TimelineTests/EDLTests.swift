import Foundation
import Testing
@testable import Timeline

@Suite("CMX 3600 EDL")
struct EDLTests {
    /// `NNN  REEL____ CHAN_ T___ DUR HH:MM:SS:FF x4`, fixed columns.
    static let eventLinePattern =
        #"^(\d{3})  ([A-Z0-9_]{1,8}) *(AA/V|V) *(C|D) *(\d{3})? (\d\d:\d\d:\d\d[:;]\d\d) (\d\d:\d\d:\d\d[:;]\d\d) (\d\d:\d\d:\d\d[:;]\d\d) (\d\d:\d\d:\d\d[:;]\d\d)$"#

    static func eventLines(_ text: String) -> [String] {
        text.split(separator: "\n").map(String.init).filter { $0.first?.isNumber == true }
    }

    @Test("parses back to the same source frames", arguments: Fixtures.all.map(\.name))
    func roundTrip(name: String) throws {
        let document = try #require(Fixtures.all.first { $0.name == name }).document
        let text = TimelineExport.render(document, as: .edl)
        let expected = Fixtures.expectedFrames(document).map { [$0.0, $0.1] }
        #expect(try TimelineParse.edl(text).map { [$0.sourceIn, $0.sourceOut] } == expected)
        #expect(try TimelineParse.edl(text, rate: document.rate).map { [$0.sourceIn, $0.sourceOut] } == expected)
        // Without the FRAME RATE comment the FCM line and frame fields still decide 29.97 vs 59.94.
        if document.rate.isDropFrame {
            let bare = text.split(separator: "\n").filter { !$0.hasPrefix("* FRAME RATE") }.joined(separator: "\n")
            #expect(try TimelineParse.edl(bare).map { [$0.sourceIn, $0.sourceOut] } == expected)
        }
    }

    @Test(
        "event lines: 3-digit number, reel, channels, transition, four timecodes in fixed columns",
        arguments: Fixtures.all.map(\.name))
    func lineFormat(name: String) throws {
        let document = try #require(Fixtures.all.first { $0.name == name }).document
        let text = TimelineExport.render(document, as: .edl)
        let lines = Self.eventLines(text)
        let n = Fixtures.expectedTransition(document)
        let eventLine = try Regex(Self.eventLinePattern)
        #expect(lines.count == document.clips.count + (n > 0 ? document.clips.count - 1 : 0))
        let separator: Character = document.rate.isDropFrame ? ";" : ":"
        for line in lines {
            let match = try #require(try eventLine.wholeMatch(in: line), "bad event line: \(line)")
            #expect(match.output.count == 10)
            #expect(line.count == 29 + 4 * 12 - 1, "fixed width: \(line)")
            #expect(
                line.dropFirst(5).prefix(8).trimmingCharacters(in: .whitespaces)
                    == TextEscaping.reelName(forFileName: document.sourceName))
            #expect(line.contains(document.hasAudio ? " AA/V  " : " V     "))
            for tc in line.suffix(47).split(separator: " ") { #expect(tc.dropFirst(8).first == separator) }
        }
        #expect(text.hasPrefix("TITLE: "))
        #expect(text.contains(document.rate.isDropFrame ? "\nFCM: DROP FRAME\n" : "\nFCM: NON-DROP FRAME\n"))
        #expect(
            text.components(separatedBy: "* FROM CLIP NAME: \(document.sourceName)\n").count - 1 == document.clips.count
        )
        #expect(
            text.components(separatedBy: "* REFRAME CROP ").count - 1 == document.clips.filter { $0.crop != nil }.count)
        if n > 0 {
            let dissolve = " D    \(EDLWriter.pad(String(n), 3, "0", left: true)) "
            #expect(lines.filter { $0.contains(dissolve) }.count == document.clips.count - 1)
        }
    }

    @Test(
        "record time is continuous from 01:00:00:00 and totals the clips minus the dissolves",
        arguments: Fixtures.all.map(\.name))
    func recordTime(name: String) throws {
        let document = try #require(Fixtures.all.first { $0.name == name }).document
        let rate = document.rate
        let lines = Self.eventLines(TimelineExport.render(document, as: .edl))
        let expected = Fixtures.expectedFrames(document)
        let n = Fixtures.expectedTransition(document)
        let start = try #require(Timecode("01:00:00\(rate.isDropFrame ? ";" : ":")00")?.frame(rate: rate))
        var record = start
        for line in lines {
            let tcs = line.suffix(47).split(separator: " ").compactMap { Timecode(String($0))?.frame(rate: rate) }
            #expect(tcs.count == 4)
            #expect(tcs[1] - tcs[0] == tcs[3] - tcs[2], "source and record durations agree: \(line)")
            #expect(tcs[2] == record, "record in follows the previous event: \(line)")
            record = tcs[3]
        }
        #expect(record - start == expected.map { $0.1 - $0.0 }.reduce(0, +) - n * (expected.count - 1))
    }

    @Test("a dissolve is a zero-length cut to the outgoing clip then D nnn for the incoming one")
    func dissolveEvent() throws {
        let lines = Self.eventLines(TimelineExport.render(Fixtures.ntsc(crossfade: 0.25), as: .edl))
        // Clip 1 frames 96..<237, dissolve 7: event 1 stops at 230 (134 frames); event 2 cuts to 230 then dissolves.
        #expect(lines[0] == "001  IMG_0042 AA/V  C        00:00:03;06 00:00:07;20 01:00:00;00 01:00:04;14")
        #expect(lines[1] == "002  IMG_0042 AA/V  C        00:00:07;20 00:00:07;20 01:00:04;14 01:00:04;14")
        #expect(lines[2].hasPrefix("002  IMG_0042 AA/V  D    007 00:00:41;00 "))
    }

    @Test("the tricky name is kept in the comments and reduced to a safe reel")
    func trickyName() throws {
        let text = TimelineExport.render(Fixtures.trickyName, as: .edl)
        #expect(text.contains("* FROM CLIP NAME: \(Fixtures.tricky)\n"))
        #expect(text.contains("* TO CLIP NAME: \(Fixtures.tricky)\n"))
        #expect(Self.eventLines(text).allSatisfy { $0.hasPrefix("00") && $0.contains("  BEACHSUN V     ") })
        var multiline = Fixtures.trickyName
        multiline.sourceName = "two\nlines\r\n001  FAKE.mov"
        let hostile = TimelineExport.render(multiline, as: .edl)
        #expect(Self.eventLines(hostile).count == Self.eventLines(text).count)
    }

    @Test("malformed EDLs are rejected")
    func malformed() {
        #expect(throws: TimelineParseError.self) {
            try TimelineParse.edl("001  AX V C 00:00:00:00 00:00:01:00 01:00:00:00")
        }
        #expect(throws: TimelineParseError.self) {
            try TimelineParse.edl("001  AX       V     C        00:00:00:00 00:00:01:00 01:00:00:00 01:00:02:00")
        }
        #expect(throws: TimelineParseError.self) {
            try TimelineParse.edl("001  AX       V     D    010 00:00:00:00 00:00:01:00 01:00:00:00 01:00:01:00")
        }
    }
}
