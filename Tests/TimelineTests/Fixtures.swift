import Foundation
import MediaVocabulary
@testable import Timeline

/// The documents the format tests export, and the frames they must come back as.
enum Fixtures {
    static let tricky = "\"Beach & Sun <2026>\" ünïcode.mov"

    /// Three reframed clips (16:9 source to a 9:16 output) at 29.97 fps.
    static func ntsc(crossfade: Double) -> TimelineDocument {
        TimelineDocument(
            title: "Moments highlight job_abc", sourceName: "IMG_0042.MOV", sourceDuration: 120.12,
            rate: TimelineRate(numerator: 30000, denominator: 1001),
            sourceWidth: 1920, sourceHeight: 1080, outputWidth: 1080, outputHeight: 1920, hasAudio: true,
            clips: [
                clip(3.2, 7.9, crop: CropWindow(x: 0.34, y: 0, width: 0.31640625, height: 1)),
                clip(41.05, 46.6, crop: CropWindow(x: 0, y: 0, width: 0.31640625, height: 1)),
                clip(88.0, 95.123,
                    crop: CropWindow(x: 0.68359375, y: 0, width: 0.31640625, height: 1))
            ],
            crossfadeSeconds: crossfade)
    }

    /// 25 fps, not reframed, half-second dissolves.
    static let pal = TimelineDocument(
        title: "PAL", sourceName: "clip.mp4", sourceDuration: 300, rate: TimelineRate(numerator: 25, denominator: 1),
        sourceWidth: 1280, sourceHeight: 720, outputWidth: 1280, outputHeight: 720, hasAudio: true,
        clips: [
            clip(10, 14.5), clip(60.02, 63),
            clip(200.5, 230)
        ],
        crossfadeSeconds: 0.5)

    /// 60 fps with a 0.25 s (15-frame, odd) dissolve, square crop.
    static let sixty = TimelineDocument(
        title: "Sixty", sourceName: "GX010042.MP4", sourceDuration: 600,
        rate: TimelineRate(numerator: 60, denominator: 1),
        sourceWidth: 3840, sourceHeight: 2160, outputWidth: 1080, outputHeight: 1080, hasAudio: true,
        clips: [
            clip(1.001, 2.5, crop: CropWindow(x: 0.2, y: 0, width: 0.5625, height: 1)),
            clip(500, 503.333),
            clip(10, 12, crop: CropWindow(x: 0.4375, y: 0, width: 0.5625, height: 1))
        ],
        crossfadeSeconds: 0.25)

    /// 59.94 fps drop-frame, long enough for the record side to cross several minutes.
    static let ntsc60 = TimelineDocument(
        title: "NTSC 60", sourceName: "drone.mov", sourceDuration: 1200,
        rate: TimelineRate(numerator: 60000, denominator: 1001),
        sourceWidth: 1920, sourceHeight: 1080, outputWidth: 1920, outputHeight: 1080, hasAudio: true,
        clips: [clip(59.9, 200.1), clip(601, 700)],
        crossfadeSeconds: 0.25)

    /// A file name with quotes, `&`, `<`, `>`, spaces and non-ASCII; 23.976 fps; no audio.
    static let trickyName = TimelineDocument(
        title: "Job <\"quoted\"> & more", sourceName: tricky, sourceDuration: 40,
        rate: TimelineRate(numerator: 24000, denominator: 1001),
        sourceWidth: 1080, sourceHeight: 1920, outputWidth: 1080, outputHeight: 1920, hasAudio: false,
        clips: [clip(0, 2), clip(5, 9.5)],
        crossfadeSeconds: 0.25)

    static let all: [(name: String, document: TimelineDocument)] = [
        ("29.97 cuts", ntsc(crossfade: 0)), ("29.97 dissolves", ntsc(crossfade: 0.25)), ("25", pal),
        ("60", sixty), ("59.94", ntsc60), ("tricky name", trickyName)
    ]

    /// Each clip's frames by the rule (in = round(start * rate), out = round(end * rate)),
    /// computed here independently of the library.
    static func expectedFrames(_ document: TimelineDocument) -> [(Int, Int)] {
        let fps = Double(document.rate.numerator) / Double(document.rate.denominator)
        return document.clips.map { (Int(($0.start * fps).rounded()), Int(($0.end * fps).rounded())) }
    }

    /// Dissolve frames: round(crossfade * rate), at most half the shortest clip.
    static func expectedTransition(_ document: TimelineDocument) -> Int {
        guard document.clips.count > 1 else { return 0 }
        let fps = Double(document.rate.numerator) / Double(document.rate.denominator)
        let shortest = expectedFrames(document).map { $0.1 - $0.0 }.min() ?? 0
        return min(Int((document.crossfadeSeconds * fps).rounded()), shortest / 2)
    }
}

/// Runs the external validators. A missing tool is a test failure with the command that
/// installs it, never a skip.
enum Tools {
    struct Failure: Error, CustomStringConvertible { var description: String }

    static let installHint = """
        install the validators with: apt-get install -y libxml2-utils python3-pip && \
        python3 -m pip install opentimelineio (add --break-system-packages on an externally managed Python)
        """

    /// The absolute path of `name` on PATH.
    static func locate(_ name: String) throws -> String {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/local/bin:/usr/bin:/bin"
        for dir in path.split(separator: ":") {
            let candidate = "\(dir)/\(name)"
            if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
        }
        throw Failure(description: "\(name) is not installed (not on PATH): \(installHint)")
    }

    /// Runs `tool` with `arguments`; returns its exit status, standard output and error.
    static func run(_ tool: String, _ arguments: [String]) throws -> (status: Int32, stdout: String, stderr: String) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: try locate(tool))
        process.arguments = arguments
        let dir = FileManager.default.temporaryDirectory
        let outURL = dir.appendingPathComponent("timeline-\(UUID().uuidString).out")
        let errURL = dir.appendingPathComponent("timeline-\(UUID().uuidString).err")
        _ = FileManager.default.createFile(atPath: outURL.path, contents: nil)
        _ = FileManager.default.createFile(atPath: errURL.path, contents: nil)
        defer { try? FileManager.default.removeItem(at: outURL); try? FileManager.default.removeItem(at: errURL) }
        let out = try FileHandle(forWritingTo: outURL), err = try FileHandle(forWritingTo: errURL)
        process.standardOutput = out
        process.standardError = err
        process.standardInput = FileHandle.nullDevice
        try process.run()
        process.waitUntilExit()
        try out.close()
        try err.close()
        let stdout = String(decoding: (try? Data(contentsOf: outURL)) ?? Data(), as: UTF8.self)
        let stderr = String(decoding: (try? Data(contentsOf: errURL)) ?? Data(), as: UTF8.self)
        return (process.terminationStatus, stdout, stderr)
    }

    /// Writes `text` to a new temporary file with `ext`; the caller removes it.
    static func temporaryFile(_ text: String, ext: String) throws -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("timeline-\(UUID().uuidString).\(ext)")
        try Data(text.utf8).write(to: url)
        return url
    }
}

/// A highlight segment over source seconds `start`...`end` (what the timeline draws: its span and crop).
func clip(_ start: Double, _ end: Double, crop: CropWindow? = nil) -> Segment {
    Segment(start: start, end: end, score: 1, reason: "test", crop: crop)
}
