import Foundation
import Testing
@testable import Timeline

@Suite("OpenTimelineIO")
struct OTIOTests {
    /// What the OpenTimelineIO library itself reads from a file.
    struct Read: Decodable {
        struct Track: Decodable { var kind: String; var duration: Double; var items: [Item] }
        struct Item: Decodable {
            var type: String
            var start: Double?, duration: Double?, rate: Double?
            var handleIn: Double?, handleOut: Double?
            var url: String?, name: String?, cropX: Double?
            var kind: String?, inOffset: Double?, outOffset: Double?
        }
        var name: String
        var tracks: [Track]
    }

    /// Reads `.otio` text with `opentimelineio.adapters.read_from_file` in python3.
    static func readWithOTIO(_ text: String) throws -> Read {
        let script = """
            import json, sys
            import opentimelineio as otio
            timeline = otio.adapters.read_from_file(sys.argv[1])
            tracks = []
            for track in timeline.tracks:
                items = []
                for child in track:
                    if isinstance(child, otio.schema.Transition):
                        items.append({"type": "transition", "kind": child.transition_type,
                                      "inOffset": child.in_offset.value, "outOffset": child.out_offset.value,
                                      "rate": child.in_offset.rate})
                    elif isinstance(child, otio.schema.Clip):
                        r = child.source_range
                        h_in, h_out = track.handles_of_child(child)
                        moments = child.metadata.get("moments", {})
                        crop_x = moments["reframe"]["crop"]["x"] if "reframe" in moments else None
                        items.append({"type": "clip", "start": r.start_time.value, "duration": r.duration.value,
                                      "rate": r.start_time.rate, "handleIn": h_in.value if h_in else 0,
                                      "handleOut": h_out.value if h_out else 0,
                                      "url": child.media_reference.target_url, "name": child.name, "cropX": crop_x})
                tracks.append({"kind": track.kind, "duration": track.duration().value, "items": items})
            print(json.dumps({"name": timeline.name, "tracks": tracks}))
            """
        let file = try Tools.temporaryFile(text, ext: "otio")
        defer { try? FileManager.default.removeItem(at: file) }
        let result = try Tools.run("python3", ["-c", script, file.path])
        guard result.status == 0 else {
            throw Tools.Failure(description: "python3 + opentimelineio failed (\(Tools.installHint)): \(result.stderr)")
        }
        do {
            return try JSONDecoder().decode(Read.self, from: Data(result.stdout.utf8))
        } catch {
            throw Tools.Failure(description: "unexpected output from the OTIO script: \(result.stdout) \(error)")
        }
    }

    @Test("opentimelineio reads the same frames, transitions and lengths", arguments: Fixtures.all.map(\.name))
    func roundTrip(name: String) throws {
        let document = try #require(Fixtures.all.first { $0.name == name }).document
        let read = try Self.readWithOTIO(TimelineExport.render(document, as: .otio))
        let expected = Fixtures.expectedFrames(document)
        let n = Fixtures.expectedTransition(document)
        let total = expected.map { $0.1 - $0.0 }.reduce(0, +) - n * (expected.count - 1)
        let fps = Double(document.rate.numerator) / Double(document.rate.denominator)
        #expect(read.name == document.title)
        #expect(read.tracks.map(\.kind) == (document.hasAudio ? ["Video", "Audio"] : ["Video"]))
        for track in read.tracks {
            #expect(track.duration == Double(total), "\(track.kind) track length")
            let clips = track.items.filter { $0.type == "clip" }
            let transitions = track.items.filter { $0.type == "transition" }
            #expect(transitions.count == (n > 0 ? expected.count - 1 : 0))
            for t in transitions {
                #expect(t.kind == "SMPTE_Dissolve")
                #expect(t.inOffset == Double(n / 2) && t.outOffset == Double(n - n / 2))
                #expect(t.rate == fps)
            }
            // Full media of each clip = its source range widened by the adjacent transitions.
            let full = clips.map { clip -> [Int] in
                let start = (clip.start ?? -1) - (clip.handleIn ?? 0)
                let end = (clip.start ?? -1) + (clip.duration ?? 0) + (clip.handleOut ?? 0)
                return [Int(start), Int(end)]
            }
            #expect(full == expected.map { [$0.0, $0.1] })
            #expect(clips.allSatisfy { $0.rate == fps && $0.name == document.sourceName })
            #expect(clips.allSatisfy { $0.url == TextEscaping.fileURL(forName: document.sourceName) })
            #expect(clips.map(\.cropX) == document.clips.map { $0.crop?.x })
        }
    }

    @Test("the document is the schema OTIO writes: Timeline.1, Stack.1, Track.1, Clip.2, ExternalReference.1")
    func schema() throws {
        let text = TimelineExport.render(Fixtures.ntsc(crossfade: 0.25), as: .otio)
        let json = try #require(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any])
        #expect(json["OTIO_SCHEMA"] as? String == "Timeline.1")
        let stack = try #require(json["tracks"] as? [String: Any])
        #expect(stack["OTIO_SCHEMA"] as? String == "Stack.1")
        let tracks = try #require(stack["children"] as? [[String: Any]])
        #expect(tracks.map { $0["OTIO_SCHEMA"] as? String } == ["Track.1", "Track.1"])
        let items = try #require(tracks[0]["children"] as? [[String: Any]])
        #expect(
            items.compactMap { $0["OTIO_SCHEMA"] as? String }
                == ["Clip.2", "Transition.1", "Clip.2", "Transition.1", "Clip.2"])
        let refs = try #require(items[0]["media_references"] as? [String: Any])
        let ref = try #require(refs["DEFAULT_MEDIA"] as? [String: Any])
        #expect(ref["OTIO_SCHEMA"] as? String == "ExternalReference.1")
        #expect(ref["target_url"] as? String == "file:///IMG_0042.MOV")
        let metadata = try #require(items[0]["metadata"] as? [String: Any])
        #expect(Array(metadata.keys) == ["moments"])
    }
}
