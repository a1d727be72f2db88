import CFFmpeg

/// Turns decoded source pictures into output pictures: 8-bit yuv420p at the output size. A source
/// already in that form passes through untouched; anything else (other sizes, 10-bit, full range,
/// 4:2:2...) goes through one sws conversion. HDR is scaled to the output size first, staying in
/// 10-bit (one sws call, or none when the size and format already match), then tone-mapped at the
/// output size straight into the output picture: no full-size RGB picture is ever made.
final class VideoConverter {
    let width: Int
    let height: Int
    private let scaler: Scaler
    private let hdr: (scaler: Scaler, scaled: Frame, mapper: ToneMapper)?

    init(width: Int, height: Int, hdrTransfer: ToneMapper.Transfer?) throws(MediaError) {
        self.width = width
        self.height = height
        scaler = Scaler(width: width, height: height, format: AV_PIX_FMT_YUV420P, flags: SWS_BICUBIC)
        if let hdrTransfer {
            hdr = (Scaler(width: width, height: height, format: AV_PIX_FMT_YUV420P10LE, flags: SWS_BICUBIC),
                   try Frame(width: width, height: height, format: AV_PIX_FMT_YUV420P10LE),
                   ToneMapper(transfer: hdrTransfer))
        } else {
            hdr = nil
        }
    }

    /// True when `frame` can go to the encoder as it is.
    func passesThrough(_ frame: Frame) -> Bool {
        hdr == nil && frame.width == width && frame.height == height && frame.pixelFormat == AV_PIX_FMT_YUV420P
            && frame.pointer.pointee.color_range != AVCOL_RANGE_JPEG
    }

    /// Converts `source` into `output` (a writable yuv420p frame of the output size).
    func convert(_ source: Frame, into output: Frame) throws(MediaError) {
        try output.makeWritable()
        if let hdr {
            // Limited-range 10-bit 4:2:0 at the output size: what the tone mapper reads.
            let ready = source.width == width && source.height == height && source.pixelFormat == AV_PIX_FMT_YUV420P10LE
                && source.pointer.pointee.color_range != AVCOL_RANGE_JPEG
            let scaled = ready ? source : hdr.scaled
            if !ready { try hdr.scaler.scale(source, into: hdr.scaled) }
            guard let sy = scaled.data(0), let su = scaled.data(1), let sv = scaled.data(2),
                  let dy = output.data(0), let du = output.data(1), let dv = output.data(2) else {
                throw MediaError(.ffmpeg, operation: "tone map", detail: "picture has no data")
            }
            hdr.mapper.map(y: sy, u: su, v: sv, strides: (scaled.linesize(0), scaled.linesize(1), scaled.linesize(2)),
                           into: dy, du, dv, strides: (output.linesize(0), output.linesize(1), output.linesize(2)),
                           width: width, height: height)
        } else if passesThrough(source) {
            try check(av_frame_copy(output.pointer, source.pointer), "av_frame_copy")
        } else {
            try scaler.scale(source, into: output)
        }
    }

    /// Blends `other` into `frame`: frame = frame * weight + other * (1 - weight), weight in 0...1.
    static func blend(_ frame: Frame, with other: Frame, weight: Double) {
        let w = Int32((weight * 256).rounded())
        for plane in 0..<3 {
            guard let a = frame.data(plane), let b = other.data(plane) else { continue }
            let rows = plane == 0 ? frame.height : frame.height / 2
            let columns = plane == 0 ? frame.width : frame.width / 2
            let sa = frame.linesize(plane), sb = other.linesize(plane)
            for y in 0..<rows {
                let ra = a + y * sa, rb = b + y * sb
                for x in 0..<columns {
                    ra[x] = UInt8(truncatingIfNeeded: (Int32(ra[x]) * w + Int32(rb[x]) * (256 - w) + 128) >> 8)
                }
            }
        }
    }
}
