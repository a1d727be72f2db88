import Analysis
import Foundation
import Highlight
import AnalysisDecode
import MediaEngine
import MediaPictures
import MediaSynth
import Testing

/// An HDR recording is analysed as the same scene in SDR: its pictures are tone-mapped to BT.709
/// before any analyser sees them. In HLG's BT.2020 code values colours crowd together, and the
/// selection's look-alike rule (similar picture in the same colours) took distinct moments for one
/// scene, so a dull part filled the highlight in place of a lively one.
@Suite("HDR selection")
struct HDRSelectionTests {
    /// The SDR file as a phone records HDR: HEVC Main10, HLG transfer, BT.2020 primaries and
    /// matrix, the colours converted by the ffmpeg CLI's zscale (which `make test` installs).
    static func hlgRecording(of source: String, to output: String) throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = [
            "ffmpeg", "-hide_banner", "-loglevel", "error", "-y", "-i", source, "-vf",
            "zscale=tin=bt709:min=bt709:pin=bt709:rin=tv:t=arib-std-b67:m=bt2020nc:p=bt2020:r=tv,format=yuv420p10le",
            "-c:v", "libx265", "-preset", "ultrafast", "-crf", "18", "-x265-params",
            "log-level=error:colorprim=bt2020:transfer=arib-std-b67:colormatrix=bt2020nc",
            "-color_primaries", "bt2020", "-color_trc", "arib-std-b67", "-colorspace", "bt2020nc",
            "-tag:v", "hvc1", "-an", output,
        ]
        try process.run()
        process.waitUntilExit()
        #expect(
            process.terminationStatus == 0,
            "the ffmpeg CLI (Debian package ffmpeg, with zscale and libx265) must be installed: it writes the HLG recording")
        guard process.terminationStatus == 0 else { throw CocoaError(.fileWriteUnknown) }
    }

    @Test("an HLG recording of the planted layout gets the lively moments its SDR original gets, none twice")
    func hlgPickedAsSDR() throws {
        let dir = Scratch()
        let (sdr, spec) = try plantedVideo(dir)
        let hlg = dir.path("planted-hlg.mp4")
        try HDRSelectionTests.hlgRecording(of: sdr, to: hlg)
        #expect(try Probe.probe(hlg).video.isHDR)

        func highlight(_ path: String) throws -> [Segment] {
            var request = HighlightRequest(source: path)
            request.selection.targetDuration = 12
            return try HighlightEngine.make(request).report.segments
        }
        let expected = try highlight(sdr)
        let segments = try highlight(hlg)
        let (total, lively, defect) = plantedShares(segments, spec)
        #expect(abs(total - 12) <= 0.5, "total \(total)")
        #expect(lively / total >= 0.85, "lively share \(lively / total): \(segments.map { ($0.start, $0.end) })")
        #expect(defect == 0, "defect seconds \(defect)")
        // The same moments as the SDR original (each start within a few frames).
        #expect(segments.count == expected.count, "\(segments.map(\.start)) against \(expected.map(\.start))")
        for (a, b) in zip(segments, expected) { #expect(abs(a.start - b.start) <= 0.2, "\(a.start) against \(b.start)") }
        let original = segments.contains { $0.start < 11 && $0.end > 6 }
        let repeated = segments.contains { $0.start < 51 && $0.end > 46 }
        #expect(!(original && repeated), "the repeated footage appears twice")
    }

    /// A phone's HDR original shared again in SDR (as messaging apps convert it): the same moments,
    /// so the re-upload is recognised and placed on the original's frames.
    @Test("an HLG original recognises its SDR version as a re-upload, to the frame")
    func hlgOriginalSDRCopy() throws {
        let dir = Scratch()
        let sdr = try ReuploadMedia.write(ReuploadMedia.spec(), dir, "sdr.mp4")
        let hlg = dir.path("hlg.mp4")
        try HDRSelectionTests.hlgRecording(of: sdr, to: hlg)
        var settings = AnalysisSettings()
        settings.shots.jumpCuts = false
        let stored = try #require(try AnalysisPipeline.analyze(hlg, settings: settings).fingerprint)
        for phase in [0, 13] {
            let look = try ReuploadMedia.fingerprint(sdr, sparse: SparseSampling(phase: phase))
            let verdict = FingerprintMatcher.judge(look, stored)
            let match = try #require(verdict.match, "phase \(phase): \(verdict)")
            #expect(abs(match.offset) <= 1.0 / 30 + 1e-6, "phase \(phase): offset \(match.offset)")
        }
    }
}
