import Analysis
import MediaEngine

extension AnalysisFrame {
    /// This decoded frame as the analysers read it (its planes, no copy); nil when a plane is missing.
    var view: FrameView? {
        guard let y = luma.baseAddress, let u = cb.baseAddress, let v = cr.baseAddress else { return nil }
        return FrameView(
            time: time, width: width, height: height, luma: y, lumaStride: lumaStride,
            chromaWidth: chromaWidth, chromaHeight: chromaHeight, cb: u, cr: v, chromaStride: chromaStride)
    }
}
