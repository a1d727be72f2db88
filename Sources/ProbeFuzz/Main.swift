import Foundation
import MediaEngine
import MediaSynth

#if FUZZING
    // Built with `-sanitize=fuzzer -DFUZZING` (make fuzz): libFuzzer drives the harness. SwiftPM
    // renames this target's main, so libFuzzer's own main runs and calls LLVMFuzzerTestOneInput;
    // where the Swift main is the process's main instead, it hands over to libFuzzer's driver.
    @_cdecl("LLVMFuzzerTestOneInput")
    public func fuzzOne(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
        Harness.run(data.map { Array(UnsafeBufferPointer(start: $0, count: size)) } ?? [])
        return 0
    }

    @_silgen_name("LLVMFuzzerRunDriver")
    func LLVMFuzzerRunDriver(
        _ argc: UnsafeMutablePointer<Int32>,
        _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>,
        _ callback: @convention(c) (UnsafePointer<UInt8>?, Int) -> Int32
    ) -> Int32

    @main
    struct ProbeFuzz {
        static func main() throws {
            var argc = CommandLine.argc
            var argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>? = CommandLine.unsafeArgv
            exit(
                LLVMFuzzerRunDriver(&argc, &argv) { data, size in
                    Harness.run(data.map { Array(UnsafeBufferPointer(start: $0, count: size)) } ?? [])
                    return 0
                })
        }
    }
#else
    /// Without libFuzzer: `seed DIR` writes the seed corpus, `run FILE...` replays inputs (a crash
    /// reproduces), `mutate SECONDS DIR...` runs a plain mutation loop over the files in DIRs.
    @main
    struct ProbeFuzz {
        static func main() throws {
            let args = Array(CommandLine.arguments.dropFirst())
            switch args.first {
            case "seed" where args.count == 2:
                try Seeds.write(to: args[1])
            case "run":
                for path in args.dropFirst() {
                    Harness.run(try [UInt8](Data(contentsOf: URL(fileURLWithPath: path))))
                    print("ok \(path)")
                }
            case "mutate" where args.count >= 3:
                try Mutator.run(seconds: Double(args[1]) ?? 60, corpora: Array(args.dropFirst(2)))
            default:
                print("usage: ProbeFuzz seed DIR | run FILE... | mutate SECONDS DIR...")
                exit(2)
            }
        }
    }
#endif

/// The seed corpus: small valid files in each accepted container family, from MediaSynth.
enum Seeds {
    static func write(to directory: String) throws {
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let scratch = FileManager.default.temporaryDirectory.appendingPathComponent("probefuzz-\(getpid())").path
        try FileManager.default.createDirectory(atPath: scratch, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: scratch) }
        var specs: [(String, SynthSpec)] = []
        var plain = SynthSpec()
        plain.width = 32; plain.height = 24; plain.duration = 0.5; plain.frameRate = Rational(10, 1)
        plain.keyframeIntervalSeconds = 0.2
        specs.append(("av", plain))
        var silent = plain
        silent.audio = false
        silent.rotation = 90
        specs.append(("rotated", silent))
        var vfr = plain
        vfr.variableFrameRate = true
        specs.append(("vfr", vfr))
        for (name, spec) in specs {
            let mp4 = "\(scratch)/\(name).mp4"
            try Synth.write(spec, to: mp4)
            try FileManager.default.copyItem(atPath: mp4, toPath: "\(directory)/\(name).mp4")
            // (AVI would need H.264 in Annex B, which a plain remux does not convert to.)
            for (container, ext) in [("matroska", "mkv"), ("mpegts", "ts"), ("flv", "flv"), ("asf", "wmv")] {
                let output = "\(directory)/\(name).\(ext)"
                do { try Remuxer.remux(mp4, to: output, container: container) } catch {
                    try? FileManager.default.removeItem(atPath: output)
                    print("note: no \(ext) seed for \(name): \(error)")
                }
            }
        }
        // Refused kinds, so the fuzzer sees them too.
        try Data("#EXTM3U\n#EXT-X-TARGETDURATION:2\n#EXTINF:2.0,\n/etc/passwd\n#EXT-X-ENDLIST\n".utf8)
            .write(to: URL(fileURLWithPath: "\(directory)/playlist.m3u8"))
        try Data("ffconcat version 1.0\nfile '/etc/passwd'\n".utf8).write(
            to: URL(fileURLWithPath: "\(directory)/list.ffconcat"))
        let files = try FileManager.default.contentsOfDirectory(atPath: directory)
        print("seed corpus: \(files.count) files in \(directory)")
    }
}

/// A plain mutation loop (no coverage feedback): bit flips, interesting values, insertions,
/// deletions and splices of the corpus files, each run in-process. The input being run is
/// written first to `current-input` so that a crash leaves its reproducer behind.
enum Mutator {
    static func run(seconds: Double, corpora: [String]) throws {
        var seeds: [[UInt8]] = []
        for directory in corpora {
            for name in (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? [] {
                if let data = FileManager.default.contents(atPath: "\(directory)/\(name)") {
                    seeds.append([UInt8](data))
                }
            }
        }
        guard !seeds.isEmpty else { print("no seeds"); exit(2) }
        var rng = SplitMix(seed: UInt64(time(nil)))
        let deadline = Date().addingTimeInterval(seconds)
        let reproducer = URL(fileURLWithPath: "current-input")
        var runs = 0
        while Date() < deadline {
            var bytes = seeds[Int(rng.next() % UInt64(seeds.count))]
            for _ in 0..<(1 + Int(rng.next() % 8)) { mutate(&bytes, rng: &rng, seeds: seeds) }
            try Data(bytes).write(to: reproducer)
            Harness.run(bytes)
            runs += 1
        }
        try? FileManager.default.removeItem(at: reproducer)
        print("mutation loop: \(runs) inputs in \(Int(seconds)) s, no crash")
    }

    static func mutate(_ bytes: inout [UInt8], rng: inout SplitMix, seeds: [[UInt8]]) {
        guard !bytes.isEmpty else { bytes = [0]; return }
        let at = Int(rng.next() % UInt64(bytes.count))
        switch rng.next() % 6 {
        case 0: bytes[at] ^= UInt8(1 << (rng.next() % 8))
        case 1: bytes[at] = UInt8(truncatingIfNeeded: rng.next())
        case 2:  // an interesting 32-bit value (sizes, counts, timescales)
            let values: [UInt32] = [0, 1, 0x7fff_ffff, 0xffff_ffff, 0x8000_0000, 2_000_000_000, 0xffff, 0x10000]
            let v = values[Int(rng.next() % UInt64(values.count))]
            for i in 0..<4 where at + i < bytes.count {
                bytes[at + i] = UInt8(truncatingIfNeeded: v >> (24 - 8 * UInt32(i)))
            }
        case 3: bytes.removeSubrange(at..<min(bytes.count, at + 1 + Int(rng.next() % 64)))
        case 4:
            bytes.insert(
                contentsOf: (0..<(1 + Int(rng.next() % 32))).map { _ in UInt8(truncatingIfNeeded: rng.next()) }, at: at)
        default:  // splice in a stretch of another seed
            let other = seeds[Int(rng.next() % UInt64(seeds.count))]
            guard !other.isEmpty else { return }
            let from = Int(rng.next() % UInt64(other.count))
            let length = min(other.count - from, 1 + Int(rng.next() % 256))
            bytes.replaceSubrange(at..<min(bytes.count, at + length), with: other[from..<(from + length)])
        }
    }
}
