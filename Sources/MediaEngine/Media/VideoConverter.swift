import CFFmpeg
import FFmpeg

/// Turns decoded source pictures into output pictures: 8-bit yuv420p at the output size. A source
/// already in that form passes through untouched; HDR goes through the tone mapper; anything else
/// (other sizes, 10-bit, full range, 4:2:2...) through one sws conversion.
package final class VideoConverter {
    package let width: Int
    package let height: Int
    private let scaler: Scaler
    /// HDR: scaled to the output size first, staying in 10 bits, then tone-mapped there.
    private let hdr: (toOutputSize: Scaler, scaled: Frame, mapper: ToneMapper)?

    /// `filter`: the sws scaling filter (bicubic for output pictures; the analysis's large
    /// reductions take area averaging).
    package init(width: Int, height: Int, hdrTransfer: ToneMapper.Transfer?, filter: Int32 = SWS_BICUBIC) throws(MediaError) {
        self.width = width
        self.height = height
        scaler = Scaler(width: width, height: height, format: AV_PIX_FMT_YUV420P, flags: filter)
        if let hdrTransfer {
            hdr = (
                Scaler(width: width, height: height, format: AV_PIX_FMT_YUV420P10LE, flags: filter),
                try Frame(width: width, height: height, format: AV_PIX_FMT_YUV420P10LE),
                ToneMapper(transfer: hdrTransfer)
            )
        } else {
            hdr = nil
        }
    }

    /// The converter of the analysis passes: to their small picture by area averaging (the right
    /// filter for a large reduction, and as cheap as point sampling), HDR tone-mapped to SDR
    /// BT.709 so that the analysers, their thresholds (measured on SDR footage) and the look-alike
    /// colours see an HDR recording as they see the same scene in SDR (HLG's BT.2020 code values
    /// crowd colours together: distinct moments looked alike).
    package static func analysis(width: Int, height: Int, stream: StreamHandle) throws(MediaError) -> VideoConverter {
        try VideoConverter(width: width, height: height, hdrTransfer: ToneMapper.Transfer(of: stream), filter: SWS_AREA)
    }

    /// True when `frame` can go to the encoder as it is.
    package func passesThrough(_ frame: Frame) -> Bool {
        hdr == nil && frame.width == width && frame.height == height && frame.pixelFormat == AV_PIX_FMT_YUV420P
            && frame.pointer.pointee.color_range != AVCOL_RANGE_JPEG
    }

    /// Converts `source` (or its `crop` window) into `output` (a writable yuv420p frame of the output
    /// size). A tone-mapped picture is tagged as what the tone mapper writes (BT.709, limited range),
    /// for a conversion that reads the tags after it (the storyboard's RGB, the poster's JPEG).
    package func convert(_ source: Frame, into output: Frame, crop: CropRect? = nil) throws(MediaError) {
        try output.makeWritable()
        if hdr != nil {
            output.pointer.pointee.colorspace = AVCOL_SPC_BT709
            output.pointer.pointee.color_range = AVCOL_RANGE_MPEG
        }
        if let crop {
            if let hdr {
                try hdr.toOutputSize.scale(source, into: hdr.scaled, crop: crop)
                try hdr.mapper.map(yuv420p10: hdr.scaled, into: output)
            } else {
                try scaler.scale(source, into: output, crop: crop)
            }
        } else if let hdr {
            if source.pixelFormat == AV_PIX_FMT_YUV420P10LE && source.width == 2 * width && source.height == 2 * height
            {
                // 4K -> 1080p (landscape or portrait): the halving is done in the tone mapper's pass.
                try hdr.mapper.map(yuv420p10: source, into: output, halve: true)
            } else if source.pixelFormat == AV_PIX_FMT_YUV420P10LE && source.width == width && source.height == height {
                try hdr.mapper.map(yuv420p10: source, into: output)
            } else {
                try hdr.toOutputSize.scale(source, into: hdr.scaled)
                try hdr.mapper.map(yuv420p10: hdr.scaled, into: output)
            }
        } else if passesThrough(source) {
            try check(av_frame_copy(output.pointer, source.pointer), "av_frame_copy")
        } else {
            try scaler.scale(source, into: output)
        }
    }

    /// Blends `other` into `frame`: frame = frame * weight + other * (1 - weight), weight in 0...1.
    package static func blend(_ frame: Frame, with other: Frame, weight: Double) {
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
