import FFmpeg
import Foundation
import AnalysisDecode
import MediaEngine
import MediaPictures
import MediaSynth
import Testing

@Suite("Sampled analysis decode")
struct SampledDecodeTests {
    /// 6 s at 30 fps with a keyframe every second; `preset` ultrafast has P-frames only (as phones
    /// record), veryfast adds B-frames.
    private func groupedVideo(_ dir: Scratch, preset: String) throws -> String {
        try dir.video("grouped-\(preset).mp4") {
            $0.duration = 6
            $0.keyframeIntervalSeconds = 1
            $0.preset = preset
        }
    }

    @Test(
        "the survey reads how far apart the keyframes are and whether frames are reordered, decoding nothing",
        arguments: ["ultrafast", "veryfast"])
    func survey(preset: String) throws {
        let dir = Scratch()
        let decoder = try AnalysisDecoder(path: try groupedVideo(dir, preset: preset))
        let survey = try decoder.surveyGOPs()
        #expect(survey.keyframeInterval.map { abs($0 - 1) < 0.01 } == true, "\(survey)")
        #expect(survey.reorders == (preset == "veryfast"))
    }

    @Test(
        "the sampled pass decodes each keyframe and the burst after it, in order, at exact times; the rest is only read",
        arguments: ["ultrafast", "veryfast"])
    func keyframesAndBursts(preset: String) throws {
        let dir = Scratch()
        var options = AnalysisOptions()
        options.skipNonReferenceFrames = false
        let decoder = try AnalysisDecoder(path: try groupedVideo(dir, preset: preset), options: options)
        var codes: [Int] = []
        var follows: [Bool] = []
        var groupsOfFrames: [Int] = []
        var groups: [GOPRecord] = []
        var audio = 0
        let summary = try decoder.runSampled(
            burstFrames: 3, reorders: preset == "veryfast",
            onFrame: { f in
                let code = Barcode.read(luma: f.luma, width: f.width, height: f.height, stride: f.lumaStride)
                codes.append(code)
                follows.append(f.follows)
                groupsOfFrames.append(f.group)
                #expect(abs(f.time - Double(code) / 30) < 1e-6)
            }, onAudio: { audio += $0.samples.count }, onGroup: { groups.append($0) })
        let expected = (0..<6).flatMap { g in (0..<4).map { g * 30 + $0 } }
        #expect(codes == expected)
        #expect(
            follows == expected.map { $0 % 30 != 0 || $0 == 0 }, "frames skipped before each keyframe but the first")
        #expect(groupsOfFrames == expected.map { $0 / 30 })
        #expect(groups.map(\.index) == Array(0..<6))
        #expect(groups.map(\.keyTime).enumerated().allSatisfy { abs($1 - Double($0)) < 1e-6 })
        #expect(groups.allSatisfy { $0.packets == 30 && !$0.complete })
        #expect(summary.framesDecoded < 60, "decoded \(summary.framesDecoded) of 180")
        #expect(summary.groups == 6 && summary.plan == "sampled")
        #expect(abs(Double(audio) - 6 * 16_000) < 1_200, "the audio is decoded completely: \(audio) samples")
    }

    @Test("refinement decodes every frame of each range, and only those", arguments: ["ultrafast", "veryfast"])
    func ranges(preset: String) throws {
        let dir = Scratch()
        var options = AnalysisOptions()
        options.skipNonReferenceFrames = false
        let decoder = try AnalysisDecoder(path: try groupedVideo(dir, preset: preset), options: options)
        var seen: [(group: Int, code: Int, follows: Bool)] = []
        let summary = try decoder.runRanges([TimeRange(start: 1, end: 1.5), TimeRange(start: 3, end: 4.2)]) { f in
            seen.append(
                (f.group, Barcode.read(luma: f.luma, width: f.width, height: f.height, stride: f.lumaStride), f.follows)
            )
        }
        let expected = Array(30...45).map { (0, $0) } + Array(90...126).map { (1, $0) }
        #expect(seen.map(\.code) == expected.map(\.1))
        #expect(seen.map(\.group) == expected.map(\.0))
        #expect(seen.map(\.follows) == expected.map { $0.1 != 30 && $0.1 != 90 })
        #expect(summary.framesDecoded < 100, "decoded \(summary.framesDecoded)")
    }

    @Test("a header cannot buy work: the sampled pass holds the same decode limits")
    func limits() throws {
        let dir = Scratch()
        var options = AnalysisOptions()
        options.limits = DecodeLimits(maxDecodedSeconds: 2.5)
        let decoder = try AnalysisDecoder(path: try groupedVideo(dir, preset: "ultrafast"), options: options)
        #expect(throws: MediaError.self) {
            try decoder.runSampled(burstFrames: 3, onFrame: { _ in }, onGroup: { _ in })
        }
    }

    @Test("the plan: full for short cheap inputs and far-apart keyframes, sampled for costly or long ones with short groups")
    func planChoice() throws {
        let dir = Scratch()
        var info = try Probe.probe(try groupedVideo(dir, preset: "ultrafast"))
        let short = GOPSurvey(keyframeInterval: 1, reorders: false, seconds: 12)
        let settings = DecodePlanSettings()
        #expect(settings.plan(for: info, survey: short).mode == .full, "320x240 H.264 is cheap")
        info.video.codec = "hevc"
        info.video.codedWidth = 3840
        info.video.codedHeight = 2160
        info.video.bitDepth = 10
        info.video.frameRate = 30
        #expect(DecodePlanSettings.cost(info) > 600)
        #expect(settings.plan(for: info, survey: short).mode == .sampled)
        #expect(
            settings.plan(for: info, survey: GOPSurvey(keyframeInterval: 8, seconds: 12)).mode == .full, "long groups")
        #expect(
            settings.plan(for: info, survey: GOPSurvey(keyframeInterval: nil, seconds: 12)).mode == .full,
            "one keyframe")
        var forced = settings
        forced.choice = .full
        #expect(forced.plan(for: info, survey: short).mode == .full)
        info.video.codec = "h264"
        info.video.codedWidth = 320
        info.video.codedHeight = 240
        forced.choice = .sampled
        #expect(forced.plan(for: info, survey: short).mode == .sampled)

        // Length: 1080p30 H.264 (cost 62) without B-frames is decoded in full for a minute, sampled for two.
        info.video.codedWidth = 1920
        info.video.codedHeight = 1080
        info.video.bitDepth = 8
        info.duration = 60
        #expect(settings.plan(for: info, survey: short).mode == .full, "a minute of 1080p30 H.264")
        info.duration = 120
        let long = settings.plan(for: info, survey: short)
        #expect(long.mode == .sampled, "two minutes of 1080p30 H.264")
        #expect(long.reason.hasPrefix("long"))
        #expect(
            settings.plan(for: info, survey: GOPSurvey(keyframeInterval: 8, seconds: 12)).mode == .full,
            "long, but its keyframes too far apart to sample")
        let bFrames = settings.plan(for: info, survey: GOPSurvey(keyframeInterval: 1, reorders: true, seconds: 12))
        #expect(bFrames.mode == .anchors, "long, but with B-frames (sampling them costs more than it saves)")

        // B-frames: skipped by the anchors plan when the input is not sampled and a group fits.
        info.duration = 30
        #expect(settings.plan(for: info, survey: GOPSurvey(keyframeInterval: 5, reorders: true)).mode == .anchors)
        #expect(
            settings.plan(for: info, survey: GOPSurvey(keyframeInterval: 12, reorders: true)).mode == .full,
            "keyframes further apart than maxAnchorKeyframeInterval")
        #expect(
            settings.plan(for: info, survey: GOPSurvey(keyframeInterval: nil, reorders: true)).mode == .full,
            "one keyframe in the survey")
        forced.choice = .sampled
        #expect(
            forced.plan(for: info, survey: GOPSurvey(keyframeInterval: 5, reorders: true)).mode == .full,
            "sampling asked for and impossible: the full plan")
        forced.choice = .anchors
        #expect(forced.plan(for: info, survey: short).mode == .full, "no B-frames to skip")
        #expect(forced.plan(for: info, survey: GOPSurvey(keyframeInterval: 1, reorders: true)).mode == .anchors)
        // Costly B-frame streams stay sampled.
        info.video.frameRate = 60
        info.video.codec = "hevc"
        #expect(settings.plan(for: info, survey: GOPSurvey(keyframeInterval: 1, reorders: true)).mode == .sampled)
    }

    @Test("the anchors pass decodes the I- and P-frames only, in order, marking each step over skipped frames; a step decodes again whole")
    func anchorsPass() throws {
        let dir = Scratch()
        let path = try dir.video("anchors.mp4") {
            $0.duration = 6
            $0.keyframeIntervalSeconds = 1
            $0.preset = "veryfast"
            $0.fixedBFrames = 3  // I B B B P B B B P …: one frame in four is an anchor
        }
        var options = AnalysisOptions()
        options.skipNonReferenceFrames = false
        let decoder = try AnalysisDecoder(path: path, options: options)
        var times: [Double] = []
        var steps: [(Double, Double)] = []
        var groups = Set<Int>()
        let summary = try decoder.runAnchors(onFrame: { frame in
            if !frame.follows, let last = times.last { steps.append((last, frame.time)) }
            times.append(frame.time)
            groups.insert(frame.group)
        })
        let frame = 1.0 / 30
        #expect(summary?.plan == "anchors")
        #expect(groups.count == 6)
        #expect(zip(times, times.dropFirst()).allSatisfy { $0 < $1 })
        // 6 groups of 30 frames: the keyframe, 7 P-frames and the last frame of each group as
        // an anchor before the next keyframe; never a B-frame.
        #expect(times.count >= 6 * 7 && times.count <= 6 * 10, "\(times.count) frames")
        #expect(summary?.framesDecoded == times.count)
        #expect(!steps.isEmpty && steps.allSatisfy { $0.1 - $0.0 > 1.5 * frame })
        // A step decodes again with its B-frames: every frame from its start to its end.
        let (from, to) = steps[3]
        var stepTimes: [Double] = []
        try decoder.runSteps([(from: from, to: to)]) { stepTimes.append($0.time) }
        let expected = Int(((to - from) / frame).rounded()) + 1
        #expect(stepTimes.count == expected, "\(stepTimes) for \(from)...\(to)")
        #expect(abs(stepTimes.first! - from) < 1e-6 && abs(stepTimes.last! - to) < 1e-6)
    }

    @Test("B-frames are skipped only where no P-frame refers to one: x264's streams, not x265's")
    func anchorsExactness() throws {
        let dir = Scratch()
        let h264 = try dir.video("x264.mp4") {
            $0.duration = 3
            $0.keyframeIntervalSeconds = 1
            $0.preset = "veryfast"
            $0.fixedBFrames = 3
        }
        #expect(try AnalysisDecoder(path: h264).anchorsDecodeExactly())
        // x265's P-frames refer to its B-frames: skipping them would build on missing pictures.
        let hevc = try dir.video("x265.mp4") {
            $0.duration = 3
            $0.keyframeIntervalSeconds = 1
            $0.codec = .hevc
            $0.preset = "veryfast"
        }
        #expect(try AnalysisDecoder(path: hevc).surveyGOPs().reorders)
        #expect(try !AnalysisDecoder(path: hevc).anchorsDecodeExactly())
        // Nothing to skip.
        let pOnly = try dir.video("p-only.mp4") {
            $0.duration = 3
            $0.keyframeIntervalSeconds = 1
        }
        #expect(try !AnalysisDecoder(path: pOnly).anchorsDecodeExactly())
    }
}
