import FFmpeg
import Foundation
@testable import MediaSynth
import Testing

/// The tests' synthetic videos are encoded once per `make test` run: a spec asked for again is a
/// copy of the first video, and another spec (or container) is a video of its own.
@Suite("Synthetic video cache")
struct SynthCacheTests {
    @Test func aSpecAskedForAgainIsCopiedNotEncoded() throws {
        let dir = Scratch()
        let cache = SynthCache(folder: dir.path("cache"))
        var encodes = 0
        func counting(_ spec: SynthSpec, _ path: String) throws(MediaError) {
            encodes += 1
            try Synth.encode(spec, to: path)
        }
        var spec = SynthSpec()
        spec.duration = 1
        try cache.write(spec, to: dir.path("a.mp4"), encode: counting)
        try cache.write(spec, to: dir.path("b.mp4"), encode: counting)
        #expect(encodes == 1)
        let a = try Data(contentsOf: URL(fileURLWithPath: dir.path("a.mp4")))
        let b = try Data(contentsOf: URL(fileURLWithPath: dir.path("b.mp4")))
        #expect(!a.isEmpty && a == b)
        // A copy, not the cached file itself: a test that damages its video damages only its own.
        try Data("x".utf8).write(to: URL(fileURLWithPath: dir.path("b.mp4")))
        try cache.write(spec, to: dir.path("c.mp4"), encode: counting)
        let c = try Data(contentsOf: URL(fileURLWithPath: dir.path("c.mp4")))
        #expect(c == a)

        var other = spec
        other.cuts = [0.5]
        try cache.write(other, to: dir.path("d.mp4"), encode: counting)
        try cache.write(spec, to: dir.path("e.mkv"), encode: counting)
        #expect(encodes == 3)
        #expect(SynthCache.name(of: spec) != SynthCache.name(of: other))
        // Only whole videos are left in the folder.
        let names = try FileManager.default.contentsOfDirectory(atPath: dir.path("cache")).sorted()
        #expect(names.count == 3 && names.allSatisfy { $0.split(separator: ".").count == 2 }, "\(names)")
    }
}
