import Analysis
import Foundation
import Highlight
import AnalysisDecode
import MediaEngine
import MediaPictures
import MediaSynth
import Testing

@Suite("Reframing, pinned and excluded moments")
struct ReframeTests {
    /// 640x360 landscape, one shot: a 32 px bright square crossing from the left edge to the right
    /// (4 px a frame, 0.19 picture widths a second) over a moving texture, no barcode.
    static func crossingSubject(_ dir: Scratch) throws -> String {
        var spec = SynthSpec()
        spec.width = 640
        spec.height = 360
        spec.duration = 4.8
        spec.barcode = false
        let path = dir.path("subject.mp4")
        try Synth.write(spec, to: path)
        return path
    }

    /// Fraction of output frames in which the bright square is wholly in the picture (at least
    /// 85 % of its scaled area of pixels above 160).
    static func subjectInside(_ path: String, expectedArea: Double) throws -> (inside: Double, frames: Int) {
        var options = AnalysisOptions()
        options.maxSide = 4096
        options.skipNonReferenceFrames = false
        var inside = 0, frames = 0
        try AnalysisDecoder(path: path, options: options).run(onFrame: { f in
            var bright = 0
            for y in 0..<f.height {
                for x in 0..<f.width where f.luma[y * f.lumaStride + x] > 160 { bright += 1 }
            }
            frames += 1
            if Double(bright) >= 0.85 * expectedArea { inside += 1 }
        })
        return (Double(inside) / Double(max(1, frames)), frames)
    }

    @Test("9:16 from landscape keeps a moving subject in frame, with a smooth, bounded crop path")
    func verticalFollowsTheSubject() throws {
        let dir = Scratch()
        let source = try Self.crossingSubject(dir)
        var settings = AnalysisSettings()
        settings.plan.choice = .full
        let analysis = try AnalysisPipeline.analyze(source, settings: settings)
        let segment = TimeRange(start: 0.2, end: 4.6)
        let reframe = try #require(Reframer.plan(analysis, segments: [segment], aspect: .portrait))
        #expect(abs(reframe.width - (9.0 / 16) / (16.0 / 9)) < 1e-9 && reframe.height == 1)

        // The path: inside the picture, and never faster than the speed limit.
        let track = try #require(reframe.tracks.first)
        let limits = ReframeSettings()
        var previous: Double?
        var largestStep = 0.0
        for k in 0...Int((segment.duration * 30).rounded(.down)) {
            let x = track.center(at: segment.start + Double(k) / 30).x
            #expect(x >= reframe.width / 2 - 1e-9 && x <= 1 - reframe.width / 2 + 1e-9)
            if let previous { largestStep = max(largestStep, abs(x - previous)) }
            previous = x
        }
        #expect(
            largestStep <= limits.maxSpeed / 30 + 1e-9, "frame-to-frame movement \(largestStep) of the picture width")
        #expect(
            track.x.last! - track.x.first! > 0.3,
            "the window pans with the subject: \(track.x.first!) -> \(track.x.last!)")

        // Measured on the output: the subject is in the picture.
        let out = dir.path("vertical.mp4")
        var request = RenderRequest(source: source, segments: [segment], output: out)
        request.reframe = reframe
        request.quality = .low
        let result = try Renderer.render(request)
        let info = try Probe.probe(out)
        #expect(
            info.video.displayWidth == 360 && info.video.displayHeight == 640,
            "\(info.video.displayWidth)x\(info.video.displayHeight)")
        #expect(result.width == 360 && result.height == 640)
        let scale = 640.0 / 360  // the 202.5 px window shown 360 px wide
        let followed = try Self.subjectInside(out, expectedArea: pow(32 * scale, 2))
        #expect(
            followed.frames >= 120 && followed.inside >= 0.95,
            "subject in frame in \(followed.inside) of \(followed.frames) frames")

        // A centred crop loses it most of the time: the measure sees the difference.
        let centred = dir.path("centred.mp4")
        request.output = centred
        request.reframe = Reframe(
            aspect: .portrait, width: reframe.width, height: 1, tracks: [.steady(at: 0, x: 0.5, y: 0.5)])
        _ = try Renderer.render(request)
        let still = try Self.subjectInside(centred, expectedArea: pow(32 * scale, 2))
        #expect(still.inside < 0.6, "a centred window shows the subject in \(still.inside) of the frames")
    }

    @Test(
        "Rotated phone video (portrait by its display matrix) to 16:9: the window follows the subject in display coordinates"
    )
    func rotatedSourceToLandscape() throws {
        let dir = Scratch()
        var spec = SynthSpec()
        spec.width = 640
        spec.height = 360
        spec.duration = 4.8
        spec.barcode = false
        spec.rotation = 90  // shown 360x640; the square moves down the displayed picture
        let source = dir.path("rotated.mp4")
        try Synth.write(spec, to: source)
        var settings = AnalysisSettings()
        settings.plan.choice = .full
        let analysis = try AnalysisPipeline.analyze(source, settings: settings)
        #expect(analysis.width == 360 && analysis.height == 640 && analysis.rotation == 90)
        let segment = TimeRange(start: 0.2, end: 4.6)
        let reframe = try #require(Reframer.plan(analysis, segments: [segment], aspect: .landscape))
        #expect(reframe.width == 1 && reframe.height < 0.35)
        let track = try #require(reframe.tracks.first)
        #expect(
            track.y.last! - track.y.first! > 0.3,
            "the window moves down the displayed picture: \(track.y.first!) -> \(track.y.last!)")
        let out = dir.path("landscape.mp4")
        var request = RenderRequest(source: source, segments: [segment], output: out)
        request.reframe = reframe
        request.quality = .low
        _ = try Renderer.render(request)
        let info = try Probe.probe(out)
        #expect(
            info.video.displayWidth == 640 && info.video.displayHeight == 360,
            "\(info.video.displayWidth)x\(info.video.displayHeight)")
        let followed = try Self.subjectInside(out, expectedArea: pow(32 * 640.0 / 360, 2))
        #expect(followed.inside >= 0.95, "subject in frame in \(followed.inside) of \(followed.frames) frames")
    }

    @Test("Shapes: windows and output sizes from the plan; a source of that shape is left as it is")
    func shapes() {
        #expect(AspectRatio.portrait.window(displayWidth: 1080, height: 1920) == nil)
        #expect(AspectRatio.source.window(displayWidth: 1920, height: 1080) == nil)
        let vertical = try! #require(AspectRatio.portrait.window(displayWidth: 1920, height: 1080))
        let tracks = [CropTrack.steady(at: 0, x: 0.5, y: 0.5)]
        let size = Reframe(aspect: .portrait, width: vertical.width, height: vertical.height, tracks: tracks)
            .outputSize(displayWidth: 1920, height: 1080, maxShortSide: 1080)
        #expect(size.width == 1080 && size.height == 1920)
        let square = try! #require(AspectRatio.square.window(displayWidth: 1920, height: 1080))
        #expect(
            Reframe(aspect: .square, width: square.width, height: square.height, tracks: tracks)
                .outputSize(displayWidth: 1920, height: 1080, maxShortSide: 1080) == (1080, 1080))
        let feed = try! #require(AspectRatio.feed.window(displayWidth: 1920, height: 1080))
        #expect(
            Reframe(aspect: .feed, width: feed.width, height: feed.height, tracks: tracks)
                .outputSize(displayWidth: 1920, height: 1080, maxShortSide: 1080) == (1080, 1350))
        // Portrait phone video to 16:9: full width, a band of its height.
        let landscape = try! #require(AspectRatio.landscape.window(displayWidth: 1080, height: 1920))
        #expect(landscape.width == 1 && abs(landscape.height - (1080.0 / 1920) / (16.0 / 9)) < 1e-9)
    }

    @Test("The window holds still when the subject stays in view, and pans at a bounded speed when it jumps")
    func steadyOrBoundedPan() {
        let settings = ReframeSettings()
        let wobble = (0..<50).map { 0.5 + 0.02 * sin(Double($0)) }
        let still = Reframer.axis(wobble, size: 0.3, settings: settings)
        #expect(Set(still).count == 1, "a small wobble gives a steady window")
        let jump = (0..<50).map { $0 < 25 ? 0.2 : 0.8 }
        let pan = Reframer.axis(jump, size: 0.3, settings: settings)
        for i in 1..<pan.count { #expect(abs(pan[i] - pan[i - 1]) <= settings.maxSpeed * settings.step + 1e-9) }
        #expect(pan.first! < 0.3 && pan.last! > 0.7)
    }

    @Test("A pinned moment is shown even when it scores low; an excluded range never is; the length holds")
    func pinnedAndExcluded() throws {
        let dir = Scratch()
        let (path, _) = try partsVideo(
            dir, "parts.mp4", duration: 24,
            [
                SynthPart(start: 0, kind: .dull, seed: 1), SynthPart(start: 6, kind: .lively, seed: 2),
                SynthPart(start: 12, kind: .dull, seed: 3), SynthPart(start: 18, kind: .lively, seed: 5)
            ])
        var settings = AnalysisSettings()
        settings.plan.choice = .full
        let analysis = try AnalysisPipeline.analyze(path, settings: settings)
        let scored = Scoring.score(analysis.candidates, weights: ScoreWeights(), hasAudio: analysis.hasAudio)
        var selection = SelectionSettings()
        selection.targetDuration = 10
        let plain = Selector.select(analysis, scored: scored, settings: selection)
        #expect(!plain.contains { $0.start <= 3 && $0.end >= 3 }, "the dull opening is not picked on its own merit")

        selection.include = [3]
        selection.exclude = [TimeRange(start: 18, end: 24)]
        let edited = Selector.select(analysis, scored: scored, settings: selection)
        let pinned = try #require(edited.first { $0.start <= 3 && $0.end >= 3 }, "\(edited)")
        #expect(pinned.reason == "pinned moment")
        #expect(edited.allSatisfy { $0.end <= 18 || $0.start >= 24 }, "nothing from the excluded range: \(edited)")
        let total = edited.reduce(0) { $0 + $1.duration }
        #expect(abs(total - 10) <= selection.tolerance, "\(total) s for a 10 s target")

        // Two pins close together share a segment, which keeps both whatever fitting and snapping do.
        for second in [3.8, 4.6, 4.95] {
            selection.include = [3, second]
            selection.targetDuration = 6
            let shared = Selector.select(analysis, scored: scored, settings: selection)
            for pin in [3, second] {
                #expect(
                    shared.contains { $0.start <= pin && $0.end >= pin }, "pin \(pin) of [3, \(second)] in \(shared)")
            }
        }
    }

    /// analysis.jumpCuts: a jump cut between two posed parts of one scene is found on its frame
    /// with jump cuts on, and is no boundary when they are off (the default).
    @Test("jump cuts in a decoded video: found on the frame when on, none when off")
    func jumpCutsInAVideo() throws {
        let dir = Scratch()
        let (path, _) = try partsVideo(
            dir, "jump.mp4", duration: 8,
            [
                SynthPart(start: 0, kind: .posed, seed: 3, subjectX: 0.15),
                SynthPart(start: 4, kind: .posed, seed: 3, subjectX: 0.8)
            ])
        var settings = AnalysisSettings()
        settings.plan.choice = .full
        settings.skipNonReferenceFrames = false
        settings.shots.jumpCuts = false
        #expect(try AnalysisPipeline.analyze(path, settings: settings).boundaries.isEmpty)
        settings.shots.jumpCuts = true
        let found = try AnalysisPipeline.analyze(path, settings: settings).boundaries
        #expect(found.map(\.kind) == [.jump] && abs((found.first?.time ?? 0) - 4) < 0.5 / 30, "\(found)")
    }
}
