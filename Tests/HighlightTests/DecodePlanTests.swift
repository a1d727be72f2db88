import Analysis
import Foundation
import Highlight
import AnalysisDecode
import MediaEngine
import MediaPictures
import MediaSynth
import Testing

@Suite("Decode plans")
struct DecodePlanTests {
    private func settings(_ choice: DecodePlanSettings.Choice) -> AnalysisSettings {
        var s = AnalysisSettings()
        s.plan.choice = choice
        return s
    }

    @Test(
        "the sampled plan finds the same boundaries as the full decode, on the same frames, and decodes far fewer frames",
        arguments: ["ultrafast", "veryfast"])
    func sameBoundaries(preset: String) throws {
        let dir = Scratch()
        var spec = SynthSpec()
        spec.width = 480
        spec.height = 270
        spec.duration = 24
        spec.keyframeIntervalSeconds = 1
        spec.preset = preset
        spec.cuts = [3.4, 7.0, 15.83]  // inside groups, and on a keyframe
        spec.flashes = [5.2, 11.5, 19.07]  // not cuts
        spec.flashFrames = 2
        let path = dir.path("cuts.mp4")
        try Synth.write(spec, to: path)
        // Cuts only: the frame-number barcode flips up to half its bits at once, and with
        // ultrafast (no adaptive quantisation) the whole picture is requantised then, which the
        // jump measures read as a jump (the sampled plan judges jumps on the frames it decodes).
        var fullSettings = settings(.full), sampledSettings = settings(.sampled)
        fullSettings.shots.jumpCuts = false
        sampledSettings.shots.jumpCuts = false
        let full = try AnalysisPipeline.analyze(path, settings: fullSettings)
        let sampled = try AnalysisPipeline.analyze(path, settings: sampledSettings)
        let frame = 1.0 / 30
        #expect(full.boundaries.map(\.time).count == 3)
        for cut in spec.cuts {
            #expect(
                sampled.boundaries.contains { $0.kind == .cut && abs($0.time - cut) < frame / 2 },
                "cut at \(cut): \(sampled.boundaries.map(\.time))")
        }
        #expect(sampled.boundaries.map(\.time) == full.boundaries.map(\.time))
        #expect(sampled.summary.plan == "sampled")
        // Six events in 24 s: each costs a group decoded again; still well under every frame.
        let decoded = sampled.summary.framesDecoded + (sampled.summary.refinedFrames ?? 0)
        #expect(decoded < 720 * 6 / 10, "decoded \(decoded) of 720")
        // Every signal covers the whole video.
        #expect(sampled.motion.contains { $0.time > 22 } && sampled.quality.contains { $0.time > 22 })
        #expect(abs(sampled.duration - full.duration) < frame)
        #expect(sampled.shots.count == 4 && sampled.shots.last!.end >= 23.9)
    }

    /// 24 s of 480x270 H.264 with three B-frames between anchors in a fixed pattern and a keyframe
    /// every 2 s (no scene-cut keyframes: a cut lands on a B-frame as often as not), cuts at
    /// `cuts` and 2-frame flashes at `flashes`.
    private func bFrameVideo(_ dir: Scratch, cuts: [Double], flashes: [Double]) throws -> String {
        var spec = SynthSpec()
        spec.width = 480
        spec.height = 270
        spec.duration = 24
        spec.keyframeIntervalSeconds = 2
        spec.preset = "veryfast"
        spec.fixedBFrames = 3
        spec.cuts = cuts
        spec.flashes = flashes
        spec.flashFrames = 2
        let path = dir.path("bframes.mp4")
        try Synth.write(spec, to: path)
        return path
    }

    @Test(
        "the anchors plan (chosen for B-frames) finds the full decode's boundaries, each cut on its frame, from a third of the frames"
    )
    func anchorsPlan() throws {
        let dir = Scratch()
        // Frames 102, 210, 273, 475 and 541: B-frames and anchors of the IBBBP pattern.
        let cuts = [3.4, 7.0, 9.1, 15.83, 18.03]
        let path = try bFrameVideo(dir, cuts: cuts, flashes: [5.2, 11.5, 20.1])
        var fullSettings = settings(.full), autoSettings = settings(.auto)
        fullSettings.shots.jumpCuts = false
        autoSettings.shots.jumpCuts = false
        let full = try AnalysisPipeline.analyze(path, settings: fullSettings)
        let anchors = try AnalysisPipeline.analyze(path, settings: autoSettings)
        #expect(anchors.summary.plan == "anchors")
        let frame = 1.0 / 30
        for cut in cuts {
            #expect(
                anchors.boundaries.contains { $0.kind == .cut && abs($0.time - cut) < frame / 2 },
                "cut at \(cut): \(anchors.boundaries.map(\.time))")
        }
        // The full plan skips non-reference B-frames, so it puts a cut on one a frame late; the
        // anchors plan decodes the step's B-frames and puts each on its own.
        #expect(anchors.boundaries.count == full.boundaries.count)
        for (a, b) in zip(anchors.boundaries, full.boundaries) { #expect(abs(a.time - b.time) < frame * 1.5) }
        // Some cuts sat on B-frames: their steps were decoded again, a few frames each.
        let placed = anchors.summary.refinedRanges ?? 0
        #expect(placed >= 1 && placed <= cuts.count)
        let decoded = anchors.summary.framesDecoded + (anchors.summary.refinedFrames ?? 0)
        #expect(decoded < 720 * 4 / 10, "decoded \(decoded) of 720")
        #expect(anchors.motion.contains { $0.time > 23 } && anchors.quality.contains { $0.time > 23 })
        #expect(abs(anchors.duration - full.duration) < 2 * frame)
        #expect(anchors.shots.count == cuts.count + 1)
    }

    @Test(
        "with jump cuts on, the anchors plan reports the full decode's jumps, each on its frame, and none in fast motion"
    )
    func anchorsJumps() throws {
        let dir = Scratch()
        // Two jumps (the subject elsewhere in the same still scene): one on a B-frame (frame 93),
        // one on a P-frame (frame 392); between them a lively part, a large object moving fast.
        let path = try bFramePartsVideo(
            dir, "jumps.mp4", duration: 16,
            [
                SynthPart(start: 0, kind: .posed, seed: 5, subjectX: 0.2),
                SynthPart(start: 3.1, kind: .posed, seed: 5, subjectX: 0.7),
                SynthPart(start: 6, kind: .lively, seed: 31),
                SynthPart(start: 10, kind: .posed, seed: 7, subjectX: 0.25),
                SynthPart(start: 392.0 / 30, kind: .posed, seed: 7, subjectX: 0.75)
            ])
        var full = settings(.full), auto = settings(.auto)
        full.shots.jumpCuts = true
        auto.shots.jumpCuts = true
        let every = try AnalysisPipeline.analyze(path, settings: full)
        let anchors = try AnalysisPipeline.analyze(path, settings: auto)
        #expect(anchors.summary.plan == "anchors")
        let frame = 1.0 / 30
        let jumps = anchors.boundaries.filter { $0.kind == .jump }.map(\.time)
        #expect(
            jumps.count == 2 && abs(jumps[0] - 3.1) < frame / 2 && abs(jumps[1] - 392.0 / 30) < frame / 2,
            "\(anchors.boundaries)")
        // The full plan skips non-reference B-frames, so it sees the first jump a frame late.
        #expect(anchors.boundaries.map(\.kind) == every.boundaries.map(\.kind), "\(every.boundaries)")
        for (a, b) in zip(anchors.boundaries, every.boundaries) { #expect(abs(a.time - b.time) < frame * 1.5) }
    }

    @Test("a keyframe group longer than the anchors pass holds sends the analysis to the full plan, same result")
    func anchorsFallBack() throws {
        let dir = Scratch()
        let path = try bFrameVideo(dir, cuts: [3.4, 9.1], flashes: [])
        var small = settings(.anchors)
        small.shots.jumpCuts = false
        small.plan.anchorLimits.packets = 40  // a group is 60 frames
        let fallen = try AnalysisPipeline.analyze(path, settings: small)
        #expect(fallen.summary.plan == "full")
        var anchors = small
        anchors.plan.anchorLimits = .init()
        let whole = try AnalysisPipeline.analyze(path, settings: anchors)
        #expect(whole.summary.plan == "anchors")
        #expect(fallen.boundaries.count == 2 && whole.boundaries.count == 2)
        for (a, b) in zip(fallen.boundaries, whole.boundaries) { #expect(abs(a.time - b.time) < 1.5 / 30) }
        // P-frames that refer to B-frames (x265): the full plan, whatever the choice.
        var spec = SynthSpec()
        spec.width = 320
        spec.height = 180
        spec.duration = 4
        spec.keyframeIntervalSeconds = 1
        spec.codec = .hevc
        spec.preset = "veryfast"
        spec.cuts = [2.1]
        let hevc = dir.path("x265.mp4")
        try Synth.write(spec, to: hevc)
        let x265 = try AnalysisPipeline.analyze(hevc, settings: settings(.anchors))
        #expect(x265.summary.plan == "full")
        #expect(x265.boundaries.count == 1)
        // The bytes bound too.
        let decoder = try AnalysisDecoder(path: path)
        var limits = AnalysisDecoder.AnchorLimits()
        limits.bytes = 4_000
        #expect(try decoder.runAnchors(limits: limits, onFrame: { _ in }) == nil)
    }

    /// A small calm recording with a keyframe every second and hard cuts at `cuts`.
    private func calmVideo(_ dir: Scratch, _ name: String, duration: Double, cuts: [Double]) throws -> String {
        var spec = SynthSpec()
        spec.width = 480
        spec.height = 270
        spec.duration = duration
        spec.keyframeIntervalSeconds = 1
        spec.cuts = cuts
        let path = dir.path(name)
        try Synth.write(spec, to: path)
        return path
    }

    @Test("a calm phone-like recording (one cut in 40 s) decodes under a quarter of its frames, the cut on its frame")
    func calmRecording() throws {
        let dir = Scratch()
        let path = try calmVideo(dir, "calm.mp4", duration: 40, cuts: [21.47])
        let a = try AnalysisPipeline.analyze(path, settings: settings(.sampled))
        #expect(a.boundaries.map(\.time).count == 1 && abs(a.boundaries[0].time - 21.5) < 0.01, "\(a.boundaries)")
        let decoded = a.summary.framesDecoded + (a.summary.refinedFrames ?? 0)
        #expect(decoded < 1200 / 4, "decoded \(decoded) of 1200")
    }

    @Test(
        "a refined range stops once its frames look like the next keyframe: the cut on its frame, the rest of the group not decoded"
    )
    func refinementStopsOnceSettled() throws {
        let dir = Scratch()
        // A cut on frame 99, inside the keyframe group 2-4 s, from a lively scene to one standing still.
        let (path, _) = try partsVideo(
            dir, "settle.mp4", duration: 10,
            [
                SynthPart(start: 0, kind: .lively, seed: 1),
                SynthPart(start: 3.3, kind: .dull, seed: 2)
            ])
        var whole = settings(.sampled)
        whole.screen.settleFrames = 0
        let early = try AnalysisPipeline.analyze(path, settings: settings(.sampled))
        let late = try AnalysisPipeline.analyze(path, settings: whole)
        for a in [early, late] {
            #expect(a.boundaries.count == 1 && abs(a.boundaries[0].time - 3.3) < 0.01, "\(a.boundaries)")
            #expect(a.summary.refinedRanges == 2, "the cut's group and the last one: \(a.summary)")
        }
        // The cut's group: to 4 frames past the cut instead of its 60 frames (the last group's
        // frames are decoded either way).
        let saved = (late.summary.refinedFrames ?? 0) - (early.summary.refinedFrames ?? 0)
        #expect(
            saved >= 15,
            "early \(String(describing: early.summary.refinedFrames)), whole \(String(describing: late.summary.refinedFrames))"
        )
    }

    @Test(
        "phone video (4K HEVC Main10 HLG, 60 fps, portrait, P-only): the auto plan samples it and still puts the cut on its frame"
    )
    func phoneVideo() throws {
        let dir = Scratch()
        // Two 1 s keyframe groups (the second cut short), the cut inside the second. The same clip
        // as PhoneMediaTests' (one encode per run for both).
        var spec = SynthSpec.phone(width: 3840, height: 2160, frameRate: 60, duration: 1.6)
        spec.cuts = [1.3]
        let path = dir.path("phone.mp4")
        try Synth.write(spec, to: path)
        let a = try AnalysisPipeline.analyze(path, settings: AnalysisSettings())
        #expect(a.summary.plan == "sampled", "auto plan: \(String(describing: a.summary.plan))")
        #expect(a.boundaries.count == 1 && abs((a.boundaries.first?.time ?? 0) - 1.3) < 0.5 / 60, "\(a.boundaries)")
        #expect(a.width == 2160 && a.height == 3840, "portrait: \(a.width)x\(a.height)")
        #expect(a.summary.framesDecoded < 20, "sampled \(a.summary.framesDecoded) of 96 frames")
        // Jump cuts (off by default; on here) do not change the plan: `auto` still samples (jumps
        // are judged on the frames it decodes). Decoded in full, the same cut, and no jump in the
        // phone's picture (without the synthetic frame-number barcode: a code redrawn on every
        // frame is what the fine grid calls a jump, in a picture that otherwise stays). At 1080p:
        // the analysis sees 256x144 either way, and 4K HEVC is slow to encode and decode.
        #expect(!AnalysisSettings().shots.jumpCuts)
        var full = AnalysisSettings()
        full.shots.jumpCuts = true
        full.plan.choice = .full
        var plain = spec
        plain.barcode = false
        plain.width = 1920
        plain.height = 1080
        try Synth.write(plain, to: dir.path("phone-plain.mp4"))
        let b = try AnalysisPipeline.analyze(dir.path("phone-plain.mp4"), settings: full)
        #expect(
            b.summary.plan == "full" && b.boundaries.map(\.kind) == [.cut],
            "\(String(describing: b.summary.plan)) \(b.boundaries)")
    }

    @Test("a fade through black longer than a keyframe group is one fade boundary in the sampled plan too")
    func longFade() throws {
        let dir = Scratch()
        let (path, _) = try partsVideo(
            dir, "fade.mp4", duration: 16,
            [
                SynthPart(start: 0, kind: .lively, seed: 1),
                SynthPart(start: 5, kind: .black, seed: 0),
                SynthPart(start: 8.5, kind: .dull, seed: 2)
            ])
        let full = try AnalysisPipeline.analyze(path, settings: settings(.full))
        let sampled = try AnalysisPipeline.analyze(path, settings: settings(.sampled))
        #expect(
            sampled.boundaries.map(\.kind) == full.boundaries.map(\.kind), "\(sampled.boundaries) vs \(full.boundaries)"
        )
        for (a, b) in zip(sampled.boundaries, full.boundaries) { #expect(abs(a.time - b.time) < 0.04) }
    }

    @Test(
        "the planted highlight on the sampled plan: lively parts, no defects, every part boundary on its frame",
        arguments: ["h264", "hevc10"])
    func plantedSampled(codec: String) throws {
        let dir = Scratch()
        let (path, spec) = try plantedVideo(dir) { spec in
            guard codec == "hevc10" else { return }
            // As a phone stores it: HEVC Main10, P-frames only, a keyframe every second.
            spec.codec = .hevc
            spec.tenBit = true
            spec.fixedGOPWithoutBFrames = true
            spec.keyframeIntervalSeconds = 1
            spec.preset = "ultrafast"
        }
        var request = HighlightRequest(source: path)
        request.analysis = settings(.sampled)
        request.selection.targetDuration = 12
        let result = try HighlightEngine.make(request)
        #expect(result.report.decode?.plan == "sampled")
        let (total, lively, defect) = plantedShares(result.report.segments, spec)
        #expect(abs(total - 12) <= 0.5)
        #expect(lively / total >= 0.85, "lively share \(lively / total)")
        #expect(defect == 0, "defect seconds \(defect)")
        let starts: [Double] = spec.parts.dropFirst().map(\.start).filter { $0 != 11 && $0 != 15 }
        let expected: [Int] = starts.map { Int($0 * 30) }
        for e in expected {
            #expect(result.report.cuts.contains { abs($0 - e) <= 1 }, "no cut at frame \(e): \(result.report.cuts)")
        }
        #expect(result.report.boundaries.contains { $0.kind == .fade && $0.time > 11 && $0.time < 15 })
    }

    @Test("the analysis settings reach the decoder: audio rate, frame-rate cap, loop filter")
    func settingsHonoured() throws {
        let dir = Scratch()
        let (path, _) = try partsVideo(dir, "talk.mp4", duration: 6, [SynthPart(start: 0, kind: .lively, seed: 3)])
        var s = settings(.full)
        s.audioSampleRate = 8_000
        s.maxFrameRate = 10
        s.skipLoopFilter = false
        let a = try AnalysisPipeline.analyze(path, settings: s)
        #expect(abs(Double(a.summary.audioSamples) - 6 * 8_000) < 800, "\(a.summary.audioSamples) samples")
        #expect(a.summary.framesAnalysed == 60, "\(a.summary.framesAnalysed) frames analysed")
        #expect(a.summary.skippedLoopFilter == false)
        let d = try AnalysisPipeline.analyze(path, settings: settings(.full))
        #expect(abs(Double(d.summary.audioSamples) - 6 * 16_000) < 1_600)
        #expect(d.summary.skippedLoopFilter == true && d.summary.framesAnalysed > 100)
    }
}
