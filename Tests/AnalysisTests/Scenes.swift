import Analysis
import Foundation

/// Synthetic analysis frames with known content: textured scenes (seeded), moving objects, pans,
/// flashes, mixes, fades — at the analysis size.
enum Scenes {
    static let width = 256
    static let height = 144

    /// A textured scene; `dx`, `dy` shift the whole picture (a pan); `object` draws a textured
    /// 24x24 block at that position.
    static func frame(
        seed: Int, dx: Int = 0, dy: Int = 0, object: (x: Int, y: Int)? = nil, brightness: Double = 1,
        zoom: Double = 1
    ) -> OwnedFrame {
        var f = OwnedFrame(
            width: width, height: height, luma: 16,
            cb: UInt8(128 + (seed * 37) % 80 - 40), cr: UInt8(128 - (seed * 53) % 80 + 40))
        let a = 0.05 + 0.02 * Double(seed % 5), b = 0.08 + 0.015 * Double(seed % 3)
        for y in 0..<height {
            for x in 0..<width {
                let X = (Double(x) - Double(width) / 2) / zoom + Double(width) / 2 + Double(dx)
                let Y = (Double(y) - Double(height) / 2) / zoom + Double(height) / 2 + Double(dy)
                var v = 120 + 50 * sin(X * a + Double(seed)) * cos(Y * b) + 25 * sin((X - Y) * 0.19 + Double(seed))
                if let o = object, x >= o.x, x < o.x + 24, y >= o.y, y < o.y + 24 {
                    v = ((x - o.x) / 4 + (y - o.y) / 4) % 2 == 0 ? 230 : 30
                }
                f[x, y] = UInt8(max(16, min(235, 16 + (v - 16) * brightness)))
            }
        }
        return f
    }

    /// `frame` with sensor-like noise: every luma sample moved by up to `amplitude` (seeded).
    static func noisy(_ frame: OwnedFrame, amplitude: Int, seed: UInt64) -> OwnedFrame {
        var f = frame
        var state = seed &* 6364136223846793005 &+ 1442695040888963407
        for i in f.luma.indices {
            state = state &* 6364136223846793005 &+ 1442695040888963407
            let r = Int((state >> 33) % UInt64(2 * amplitude + 1)) - amplitude
            f.luma[i] = UInt8(max(16, min(235, Int(f.luma[i]) + r)))
        }
        return f
    }

    static func white() -> OwnedFrame { OwnedFrame(width: width, height: height, luma: 235) }
    static func black() -> OwnedFrame { OwnedFrame(width: width, height: height, luma: 16) }

    /// (1 - alpha) a + alpha b, every plane.
    static func mix(_ a: OwnedFrame, _ b: OwnedFrame, _ alpha: Double) -> OwnedFrame {
        var f = a
        func blend(_ x: UInt8, _ y: UInt8) -> UInt8 { UInt8((Double(x) * (1 - alpha) + Double(y) * alpha).rounded()) }
        for i in f.luma.indices { f.luma[i] = blend(a.luma[i], b.luma[i]) }
        for i in f.cb.indices { f.cb[i] = blend(a.cb[i], b.cb[i]); f.cr[i] = blend(a.cr[i], b.cr[i]) }
        return f
    }

    /// A 3x3 box blur applied `passes` times.
    static func blurred(_ frame: OwnedFrame, passes: Int) -> OwnedFrame {
        var f = frame
        for _ in 0..<passes {
            let src = f.luma
            for y in 1..<(height - 1) {
                for x in 1..<(width - 1) {
                    var s = 0
                    for dy in -1...1 { for dx in -1...1 { s += Int(src[(y + dy) * width + x + dx]) } }
                    f.luma[y * width + x] = UInt8(s / 9)
                }
            }
        }
        return f
    }

    /// Runs frames (at `fps`) through FrameFeatures into `body`.
    static func features(_ frames: [OwnedFrame], fps: Double = 30, _ body: (FrameFeatures, FrameView) -> Void) {
        var features = FrameFeatures()
        features.measuresTexture = true
        for (i, f) in frames.enumerated() {
            f.withView(time: Double(i) / fps) { view in
                features.measure(view)
                body(features, view)
            }
        }
    }
}
