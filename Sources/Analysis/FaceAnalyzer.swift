/// Samples the analysed frames for faces: every `interval` seconds, and sooner (down to
/// `changeInterval`) when the picture has changed since the last look, so a new shot is looked
/// at within a few frames of its start. Keeps every detection; `FaceTracks` links them once the
/// shot boundaries are known. Positions and sizes are fractions of the upright (displayed)
/// picture. Nothing that identifies a person is measured or kept: boxes and scores only.
public final class FaceAnalyzer {
    public struct Settings: Sendable, Codable, Equatable {
        /// Look for faces at all (`focus=action` still looks: the crop keeps faces whatever the focus).
        public var enabled = true
        /// The shared library of the detector (`FaceDetector.defaultLibrary`).
        public var library = FaceDetector.defaultLibrary
        /// Seconds between looks in a steady picture. Measured with scripts/bench-people on its
        /// 1080p30 H.264 input (3 interleaved runs, release build): one look a second adds 6-15 %
        /// to the analysis time, two a second 34-45 %; the people figures of both halves are the
        /// same at either (tracks bridge 1.2 s, the crop is smoothed over 0.5 s).
        public var interval = 1.0
        /// The shortest gap between looks, taken when the picture changed by `changeLevel` (mean
        /// absolute difference of the 32x32 thumbnails, 0...255) since the last look: a cut, a
        /// pan onto someone.
        public var changeInterval = 0.12
        public var changeLevel: Float = 18
        /// Detections scoring below this (0...1) are dropped; YuNet's own floor is 0.3. At 0.6 the
        /// judge of scripts/bench-people (OpenCV's Haar cascades) saw no face-free false detection
        /// on its tune half.
        public var minScore: Float = 0.6
        public init() {}
    }

    /// One look at a frame: its time and how many detections it added (they follow in `detections`).
    public struct Look: Sendable, Codable, Equatable {
        public var time: Double
        public var count: Int
    }

    public struct Detection: Sendable, Codable, Equatable {
        public var time: Double
        /// Box, fractions of the upright picture.
        public var x: Float
        public var y: Float
        public var width: Float
        public var height: Float
        public var score: Float
        public var frontal: Float
    }

    public let settings: Settings
    let rotation: Int
    private let looker: FaceLookThread?
    /// Why no face is looked for (nil when the detector is loaded), in words for the analysis
    /// JSON that clients read: no path or library detail (the server logs those at start-up).
    public let unavailable: String?
    private var lastThumb = [Float](repeating: 0, count: FrameFeatures.thumbSide * FrameFeatures.thumbSide)
    private var lastTime = -Double.infinity

    public init(settings: Settings, rotation: Int) {
        self.settings = settings
        self.rotation = ((rotation % 360) + 360) % 360
        if !settings.enabled {
            unavailable = "face detection is switched off on this server"
        } else if FaceDetector.load(settings.library) != nil {
            unavailable = "the face detector is not installed on this server"
        } else {
            unavailable = nil
        }
        looker = unavailable == nil ? FaceLookThread() : nil
    }

    deinit { looker?.stop() }

    /// Looks at `frame` when it is time to; `features` are the frame's shared measures.
    public func consume(_ frame: FrameView, features: FrameFeatures) {
        guard let looker else { return }
        let elapsed = frame.time - lastTime
        guard elapsed >= settings.changeInterval || elapsed < 0 else { return }
        if elapsed < settings.interval && elapsed >= 0 {
            var change: Float = 0
            features.thumb.withUnsafeBufferPointer { t in
                lastThumb.withUnsafeBufferPointer { l in
                    for i in 0..<t.count { change += abs(t[i] - l[i]) }
                }
            }
            guard change / Float(features.thumb.count) >= settings.changeLevel else { return }
        }
        lastTime = frame.time
        for i in 0..<lastThumb.count { lastThumb[i] = features.thumb[i] }
        looker.submit(frame, rotation: rotation)
    }

    /// The faces of the video: its looks, and the detections linked into tracks within shots.
    public func finish(boundaries: [Double], settings tracking: FaceTracks.Settings = .init()) -> FaceTracks {
        var looks: [Look] = [], detections: [Detection] = []
        for look in looker?.finish() ?? [] {
            let w = Float(look.width), h = Float(look.height)
            var count = 0
            for f in look.faces where f.score >= settings.minScore && f.width > 0 && f.height > 0 {
                detections.append(
                    Detection(
                        time: look.time, x: f.x / w, y: f.y / h, width: f.width / w, height: f.height / h,
                        score: f.score, frontal: f.frontal))
                count += 1
            }
            looks.append(Look(time: look.time, count: count))
        }
        return FaceTracks(
            unavailable: unavailable, looks: looks.map(\.time),
            tracks: FaceTracks.link(looks: looks, detections: detections, boundaries: boundaries, settings: tracking))
    }
}
