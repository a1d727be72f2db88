import Foundation
#if canImport(FoundationXML)
    import FoundationXML
#endif
import Testing
@testable import Timeline

@Suite("FCPXML")
struct FCPXMLTests {
    /// Every element of a document with its attributes, in document order.
    final class Elements: NSObject, XMLParserDelegate {
        var all: [(name: String, attributes: [String: String])] = []
        func parser(
            _ parser: XMLParser, didStartElement elementName: String, namespaceURI: String?,
            qualifiedName qName: String?, attributes attributeDict: [String: String] = [:]
        ) {
            all.append((elementName, attributeDict))
        }
        static func of(_ text: String) throws -> [(name: String, attributes: [String: String])] {
            let collector = Elements()
            let parser = XMLParser(data: Data(text.utf8))
            parser.delegate = collector
            guard parser.parse() else {
                throw Tools.Failure(description: "not well-formed: \(String(describing: parser.parserError))")
            }
            return collector.all
        }
    }

    /// `N/Ds` as an exact frame count at `rate`.
    func frames(_ time: String?, _ rate: TimelineRate) throws -> Int {
        let t = try #require(time.flatMap(TimelineParse.rational), "time \(String(describing: time))")
        let num = t.0 * rate.numerator, den = t.1 * rate.denominator
        #expect(num % den == 0, "\(String(describing: time)) is off the frame grid")
        return num / den
    }

    @Test("validates against the FCPXML 1.10 subset DTD with xmllint", arguments: Fixtures.all.map(\.name))
    func dtd(name: String) throws {
        let document = try #require(Fixtures.all.first { $0.name == name }).document
        let dtd = try Tools.temporaryFile(FCPXMLSubsetDTD.text, ext: "dtd")
        let file = try Tools.temporaryFile(TimelineExport.render(document, as: .fcpxml), ext: "fcpxml")
        defer { try? FileManager.default.removeItem(at: dtd); try? FileManager.default.removeItem(at: file) }
        let result = try Tools.run("xmllint", ["--noout", "--dtdvalid", dtd.path, file.path])
        #expect(result.status == 0, "xmllint: \(result.stderr)")
        #expect(result.stderr.isEmpty, "xmllint: \(result.stderr)")
    }

    @Test("the DTD check catches an element it does not allow")
    func dtdRejects() throws {
        let dtd = try Tools.temporaryFile(FCPXMLSubsetDTD.text, ext: "dtd")
        let broken = TimelineExport.render(Fixtures.pal, as: .fcpxml)
            .replacingOccurrences(of: "<spine>", with: "<spine><gap duration=\"1s\"/>")
        let file = try Tools.temporaryFile(broken, ext: "fcpxml")
        defer { try? FileManager.default.removeItem(at: dtd); try? FileManager.default.removeItem(at: file) }
        let result = try Tools.run("xmllint", ["--noout", "--dtdvalid", dtd.path, file.path])
        #expect(result.status != 0)
    }

    @Test("parses back to the same source frames", arguments: Fixtures.all.map(\.name))
    func roundTrip(name: String) throws {
        let document = try #require(Fixtures.all.first { $0.name == name }).document
        let clips = try TimelineParse.fcpxml(TimelineExport.render(document, as: .fcpxml))
        #expect(clips.map { [$0.sourceIn, $0.sourceOut] } == Fixtures.expectedFrames(document).map { [$0.0, $0.1] })
    }

    @Test(
        "spine timing: clips abut at the cuts, transitions straddle them, the sequence is sum minus overlaps",
        arguments: Fixtures.all.map(\.name))
    func timing(name: String) throws {
        let document = try #require(Fixtures.all.first { $0.name == name }).document
        let rate = document.rate
        let elements = try Elements.of(TimelineExport.render(document, as: .fcpxml))
        let expected = Fixtures.expectedFrames(document)
        let n = Fixtures.expectedTransition(document)
        let sequence = try #require(elements.first { $0.name == "sequence" })
        let total = expected.map { $0.1 - $0.0 }.reduce(0, +) - n * (expected.count - 1)
        #expect(try frames(sequence.attributes["duration"], rate) == total)
        #expect(sequence.attributes["tcFormat"] == (rate.isDropFrame ? "DF" : "NDF"))
        let clips = elements.filter { $0.name == "asset-clip" }
        let transitions = elements.filter { $0.name == "transition" }
        #expect(clips.count == expected.count)
        #expect(transitions.count == (n > 0 ? expected.count - 1 : 0))
        var end = 0
        for (i, clip) in clips.enumerated() {
            let offset = try frames(clip.attributes["offset"], rate)
            #expect(offset == end, "clip \(i) starts at the previous clip's end")
            end = offset + (try frames(clip.attributes["duration"], rate))
            if i < transitions.count {
                let t = transitions[i]
                let tOffset = try frames(t.attributes["offset"], rate)
                #expect(try frames(t.attributes["duration"], rate) == n)
                #expect(tOffset == end - n / 2, "the dissolve is centred on the cut")
                #expect(t.attributes["name"] == "Cross Dissolve")
            }
        }
        #expect(end == total)
    }

    @Test("resources: output format, asset with the file URL and audio, 1.10 media-rep")
    func resources() throws {
        let text = TimelineExport.render(Fixtures.ntsc(crossfade: 0.25), as: .fcpxml)
        #expect(text.hasPrefix("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<!DOCTYPE fcpxml>"))
        #expect(text.contains("<fcpxml version=\"1.10\">"))
        let elements = try Elements.of(text)
        let formats = elements.filter { $0.name == "format" }
        #expect(formats.count == 2)
        #expect(formats[0].attributes["frameDuration"] == "1001/30000s")
        #expect(formats[0].attributes["width"] == "1080" && formats[0].attributes["height"] == "1920")
        #expect(formats[1].attributes["width"] == "1920" && formats[1].attributes["height"] == "1080")
        let asset = try #require(elements.first { $0.name == "asset" })
        #expect(asset.attributes["hasAudio"] == "1" && asset.attributes["hasVideo"] == "1")
        #expect(asset.attributes["format"] == formats[1].attributes["id"])
        #expect(try frames(asset.attributes["duration"], Fixtures.ntsc(crossfade: 0).rate) == 3600)
        let rep = try #require(elements.first { $0.name == "media-rep" })
        #expect(rep.attributes == ["kind": "original-media", "src": "file:///IMG_0042.MOV"])
        #expect(elements.contains { $0.name == "effect" && $0.attributes["name"] == "Cross Dissolve" })
        #expect(elements.filter { $0.name == "filter-audio" }.count == 2)
        #expect(elements.first { $0.name == "project" }?.attributes["name"] == "Moments highlight job_abc")
        #expect(elements.first { $0.name == "sequence" }?.attributes["format"] == formats[0].attributes["id"])
    }

    @Test("a reframe is a fit conform plus a transform that centres the crop window")
    func reframe() throws {
        let elements = try Elements.of(TimelineExport.render(Fixtures.ntsc(crossfade: 0), as: .fcpxml))
        let transforms = elements.filter { $0.name == "adjust-transform" }.map { $0.attributes }
        #expect(elements.filter { $0.name == "adjust-conform" }.allSatisfy { $0.attributes["type"] == "fit" })
        #expect(transforms.count == 3)
        // 1920x1080 fitted into 1080x1920 is 1080x607.5; the 0.3164-wide window (341.7 px of it)
        // must grow to 1080 px wide: scale 1 / 0.3164 = 3.16.
        let scale = try #require(transforms[0]["scale"]?.split(separator: " ").compactMap { Double($0) })
        #expect(scale.count == 2 && abs(scale[0] - 1 / 0.31640625 * 1) < 0.001 && scale[0] == scale[1])
        // Leftmost window: the picture (1080 * 3.16 px wide once scaled) moves right by
        // (0.5 - 0.158) of its width, which FCPXML writes in percent of the 1920 px frame height.
        let left = try #require(transforms[1]["position"]?.split(separator: " ").compactMap { Double($0) })
        let expectedX = (0.5 - 0.31640625 / 2) * 1080 / 0.31640625 / 1920 * 100
        #expect(abs(left[0] - expectedX) < 0.01 && left[1] == 0)
        let right = try #require(transforms[2]["position"]?.split(separator: " ").compactMap { Double($0) })
        #expect(abs(right[0] + expectedX) < 0.01)
        // Not reframed: no adjustments at all.
        let plain = try Elements.of(TimelineExport.render(Fixtures.pal, as: .fcpxml))
        #expect(!plain.contains { $0.name.hasPrefix("adjust-") })
    }

    @Test("a tricky file name survives escaping and is percent-encoded in the URL")
    func trickyName() throws {
        let elements = try Elements.of(TimelineExport.render(Fixtures.trickyName, as: .fcpxml))
        #expect(elements.first { $0.name == "asset" }?.attributes["name"] == Fixtures.tricky)
        #expect(elements.first { $0.name == "asset-clip" }?.attributes["name"] == Fixtures.tricky)
        #expect(elements.first { $0.name == "project" }?.attributes["name"] == "Job <\"quoted\"> & more")
        #expect(
            elements.first { $0.name == "media-rep" }?.attributes["src"]
                == "file:///%22Beach%20%26%20Sun%20%3C2026%3E%22%20%C3%BCn%C3%AFcode.mov")
        #expect(elements.first { $0.name == "asset" }?.attributes["hasAudio"] == "0")
        #expect(!elements.contains { $0.name == "filter-audio" })
    }

    @Test("times are reduced rationals of the frame grid")
    func times() {
        let ntsc = TimelineRate(numerator: 30000, denominator: 1001)
        #expect(FCPXMLWriter.time(0, rate: ntsc) == "0s")
        #expect(FCPXMLWriter.time(1, rate: ntsc) == "1001/30000s")
        #expect(FCPXMLWriter.time(30, rate: ntsc) == "1001/1000s")
        #expect(FCPXMLWriter.time(50, rate: TimelineRate(numerator: 25, denominator: 1)) == "2s")
        #expect(FCPXMLWriter.time(3, rate: TimelineRate(numerator: 60, denominator: 1)) == "1/20s")
        #expect(FCPXMLWriter.time(7, rate: TimelineRate(numerator: 50, denominator: 2)) == "7/25s")
    }

    @Test("the reader rejects times off the frame grid")
    func offGrid() {
        let text = TimelineExport.render(Fixtures.pal, as: .fcpxml).replacingOccurrences(
            of: "start=\"10s\"", with: "start=\"10001/1000s\"")
        #expect(text.contains("10001/1000s"))
        #expect(throws: TimelineParseError.self) { try TimelineParse.fcpxml(text) }
        #expect(throws: TimelineParseError.self) { try TimelineParse.fcpxml("<fcpxml><oops></fcpxml>") }
    }
}
