import Foundation
import HTTPTypes
import HummingbirdTesting
import AnalysisDecode
import MediaEngine
import MediaPictures
import MediaSynth
import NIOCore
import Store
import Testing
@testable import HighlightJob
@testable import Workers

/// Re-uploads recognised per account: a trimmed, re-encoded copy of an earlier upload
/// reuses its analysis, gets the same highlight without a second charge, and shows `duplicate_of`
/// (an untrimmed copy its storyboard too);
/// another account's identical upload and unrelated videos are not recognised.
@Suite("Re-uploads recognised", .serialized)
struct ReuploadTests {
    /// Dull at the start (so a copy trimmed by `trim` still holds the whole highlight), then lively
    /// and dull stretches.
    static let parts: [SynthPart] = [
        SynthPart(start: 0, kind: .dull, seed: 60), SynthPart(start: 3.5, kind: .lively, seed: 61),
        SynthPart(start: 8, kind: .dull, seed: 62),
        SynthPart(start: 11, kind: .lively, seed: 63), SynthPart(start: 15, kind: .dull, seed: 64),
        SynthPart(start: 18, kind: .lively, seed: 65)
    ]
    static let trim = 3.0

    /// 24 s at 320x180 with sound; `trim` seconds cut from its start and re-encoded at `crf` for the copy.
    static func video(_ name: String, trim: Double = 0, crf: Int = 18, seedOffset: Int = 0) async throws -> Data {
        var spec = SynthSpec()
        spec.width = 320
        spec.height = 180
        spec.duration = 24 - trim
        spec.barcode = false
        spec.crf = crf
        spec.parts = parts.map { SynthPart(start: $0.start - trim, kind: $0.kind, seed: $0.seed + seedOffset) }
        spec.beeps = stride(from: 1.0, to: spec.duration, by: 3).map { $0 }
        // A name of its own: the suites that make these videos run side by side.
        let path = Fixtures.directory + "/reupload-\(getpid())-\(name)-\(UUID().uuidString.prefix(8)).mp4"
        let finished = spec
        return try await withCheckedThrowingContinuation { continuation in
            Thread {
                continuation.resume(
                    with: Result {
                        try Synth.write(finished, to: path)
                        defer { try? FileManager.default.removeItem(atPath: path) }
                        return try Data(contentsOf: URL(fileURLWithPath: path))
                    })
            }.start()
        }
    }

    static func used(_ client: any TestClientProtocol, key: String) async throws -> Int {
        let account = try await client.get("/api/v1/account", key: key).json()
        return try #require((account["usage"] as? [String: Any])?["used"] as? Int)
    }

    static func upload(_ client: any TestClientProtocol, key: String, _ data: Data, target: String = "6") async throws
        -> [String: Any]
    {
        let response = try await client.upload(
            key: key, file: data, fields: [("target_duration", target), ("quality", "low")])
        #expect(response.status == .ok, "\(response.text)")
        let job = try #require(try response.json()["job_id"] as? String)
        return try await RecutTests.completed(client, job, key: key)
    }

    @Test func aTrimmedReencodedCopyIsRecognisedAndChargedOnce() async throws {
        let server = try await TestServer()
        let original = try await Self.video("original")
        let copy = try await Self.video("copy", trim: Self.trim, crf: 32)
        // Other textures: a seed 100 further on keeps Synth's texture frequencies (they follow the seed
        // modulo 5 and 4) and shifts their phase by under a radian, with the same moving object: the
        // same luma picture in other colours, which the matcher rightly calls the same footage.
        let unrelated = try await Self.video("unrelated", seedOffset: 103)
        try await withServer(server, .router) { client in
            let (_, key) = try await client.createAccount()
            let first = try await Self.upload(client, key: key, original)
            let firstID = try #require(first["job_id"] as? String)
            #expect(first["duplicate_of"] == nil, "a first upload is nobody's copy")
            #expect((first["output"] as? [String: Any])?["analysis_reused"] as? Bool == false)
            #expect(try await Self.used(client, key: key) == 1)

            let (secondID, firstFile, secondFile, firstBoard) = try await Self.copyGetsTheEarlierHighlight(
                client, key: key, copy: copy, first: first, firstID: firstID)
            try await Self.wholeReencodeGetsTheEarlierStoryboardToo(
                client, key: key, firstID: firstID, secondID: secondID, firstFile: firstFile, secondFile: secondFile,
                firstBoard: firstBoard)
            try await Self.otherHighlightsFootageAndAccounts(
                client, key: key, copy: copy, unrelated: unrelated, original: original)
        }
    }

    /// The same highlight asked of a trimmed, re-encoded copy: the earlier one, in the copy's seconds,
    /// not charged; its storyboard its own. The copy's job id, and the files compared later.
    static func copyGetsTheEarlierHighlight(
        _ client: any TestClientProtocol, key: String, copy: Data, first: [String: Any], firstID: String
    ) async throws -> (String, TestResponse, TestResponse, TestResponse) {
        // The same highlight asked of a trimmed, re-encoded copy: the earlier highlight, not charged.
        let second = try await Self.upload(client, key: key, copy)
        let secondID = try #require(second["job_id"] as? String)
        let duplicate = try #require(second["duplicate_of"] as? [String: Any], "recognised: \(second)")
        #expect(duplicate["job_id"] as? String == firstID)
        let offset = try #require(duplicate["offset_seconds"] as? Double)
        #expect(abs(offset - Self.trim) <= 1.0 / 30 + 0.001, "offset \(offset), expected \(Self.trim)")
        #expect(duplicate["result_reused"] as? Bool == true)
        #expect((second["output"] as? [String: Any])?["analysis_reused"] as? Bool == true)
        #expect(
            try await Self.used(client, key: key) == 1,
            "a re-upload given its earlier highlight is not charged again")
        // The same highlight, its moments in the copy's seconds.
        let a = RecutTests.segments(first), b = RecutTests.segments(second)
        #expect(
            a.count == b.count
                && zip(a, b).allSatisfy {
                    abs($0.start - offset - $1.start) < 0.002 && abs($0.end - offset - $1.end) < 0.002
                },
            "\(a) vs \(b)")
        let firstFile = try await client.get("/api/v1/jobs/\(firstID)/download", key: key)
        let secondFile = try await client.get("/api/v1/jobs/\(secondID)/download", key: key)
        #expect(secondFile.status == .ok && firstFile.body == secondFile.body, "the earlier highlight's file")
        #expect(try await client.get("/api/v1/jobs/\(secondID)/poster", key: key).status == .ok)
        // Its storyboard is its own: the filmstrip of another timeline.
        let firstBoard = try await client.get("/api/v1/jobs/\(firstID)/storyboard.png", key: key)
        let secondBoard = try await client.get("/api/v1/jobs/\(secondID)/storyboard.png", key: key)
        #expect(firstBoard.status == .ok && secondBoard.status == .ok && firstBoard.body != secondBoard.body)
        return (secondID, firstFile, secondFile, firstBoard)
    }

    /// A re-encode of the whole video gets the earlier highlight and storyboard; deleting the earlier
    /// job's media leaves the copy's own.
    static func wholeReencodeGetsTheEarlierStoryboardToo(
        _ client: any TestClientProtocol, key: String, firstID: String, secondID: String, firstFile: TestResponse,
        secondFile: TestResponse, firstBoard: TestResponse
    ) async throws {
        // A re-encode of the whole video (same start, same length): the earlier highlight, and its
        // storyboard too (not drawn again), not charged.
        let whole = try await Self.upload(client, key: key, try await Self.video("reencoded", crf: 30))
        let wholeID = try #require(whole["job_id"] as? String)
        let wholeDuplicate = try #require(whole["duplicate_of"] as? [String: Any], "recognised: \(whole)")
        #expect(wholeDuplicate["job_id"] as? String == firstID && wholeDuplicate["result_reused"] as? Bool == true)
        #expect(abs(try #require(wholeDuplicate["offset_seconds"] as? Double)) <= 1.0 / 30 + 0.001)
        let wholeBoard = try await client.get("/api/v1/jobs/\(wholeID)/storyboard.png", key: key)
        #expect(wholeBoard.status == .ok && wholeBoard.body == firstBoard.body, "the earlier storyboard")
        // Its detail places the filmstrip where the earlier picture has it.
        let frame = { (id: String) in
            ((try await client.get("/api/v1/jobs/\(id)", key: key).json()["output"] as? [String: Any])?["storyboard"]
                as? [String: Any]).map { NSDictionary(dictionary: $0) }
        }
        let (firstFrame, wholeFrame) = (try await frame(firstID), try await frame(wholeID))
        #expect(firstFrame != nil && firstFrame == wholeFrame)
        #expect(try await client.get("/api/v1/jobs/\(wholeID)/download", key: key).body == firstFile.body)
        #expect(try await Self.used(client, key: key) == 1)
        // Deleting the earlier job's media leaves the copy's own.
        _ = try await client.get("/api/v1/jobs/\(firstID)", key: key, method: .delete)
        #expect(try await client.get("/api/v1/jobs/\(secondID)/download", key: key).body == secondFile.body)
    }

    /// Another highlight of a copy reuses the analysis and is charged; unrelated footage and another
    /// account's identical upload are no copies.
    static func otherHighlightsFootageAndAccounts(
        _ client: any TestClientProtocol, key: String, copy: Data, unrelated: Data, original: Data
    ) async throws {
        // Another highlight of a copy: the analysis is reused (no decode), the render made and charged.
        let third = try await Self.upload(client, key: key, copy, target: "5")
        let thirdDuplicate = try #require(third["duplicate_of"] as? [String: Any], "\(third)")
        #expect(thirdDuplicate["result_reused"] as? Bool == false)
        #expect((third["output"] as? [String: Any])?["analysis_reused"] as? Bool == true)
        #expect(try await Self.used(client, key: key) == 2)
        let total = RecutTests.segments(third).reduce(0) { $0 + $1.end - $1.start }
        #expect(abs(total - 5) < 0.8)

        // Unrelated footage of the same kinds is no copy.
        let fourth = try await Self.upload(client, key: key, unrelated)
        #expect(fourth["duplicate_of"] == nil, "\(String(describing: fourth["duplicate_of"]))")
        #expect((fourth["output"] as? [String: Any])?["analysis_reused"] as? Bool == false)

        // Another account's identical upload: not recognised, not served from the first account's cache.
        let (_, other) = try await client.createAccount()
        let theirs = try await Self.upload(client, key: other, original)
        #expect(theirs["duplicate_of"] == nil)
        #expect(
            (theirs["output"] as? [String: Any])?["analysis_reused"] as? Bool == false,
            "nothing of another account's analysis")
        #expect(try await Self.used(client, key: other) == 1)
    }
}

@Suite("Re-upload candidate families")
struct ReuploadFamilyTests {
    @Test(
        "a copy of a copy belongs to the first upload; a chain leaving the candidates ends where it leaves; a cycle ends"
    )
    func families() {
        let families = HighlightJobs.families([
            ("o", nil), ("a", "o"), ("b", "a"), ("c", "gone"), ("x", nil), ("p", "q"), ("q", "p")
        ])
        #expect(families["o"] == "o" && families["a"] == "o" && families["b"] == "o")
        #expect(families["c"] == "gone" && families["x"] == "x")
        #expect(
            families["p"] != nil && families["q"] != nil, "a cycle (never written, but read from the store) still ends")
    }
}
