import CFFmpeg

/// Owns a SwsContext (sws_freeContext in deinit): converts pictures between sizes and pixel formats.
/// The context is recreated only when the source geometry or format changes.
final class Scaler {
    private var context: OpaquePointer?
    private var source = (width: 0, height: 0, format: AV_PIX_FMT_NONE)
    let width: Int
    let height: Int
    let format: AVPixelFormat
    let flags: Int32

    init(width: Int, height: Int, format: AVPixelFormat, flags: Int32 = SWS_BICUBIC) {
        self.width = width
        self.height = height
        self.format = format
        self.flags = flags
    }

    deinit { sws_freeContext(context) }

    /// Scales `input` into `output`, which must already have buffers of this scaler's size/format.
    func scale(_ input: Frame, into output: Frame) throws(MediaError) {
        let w = input.width, h = input.height, f = input.pixelFormat
        if context == nil || source.width != w || source.height != h || source.format != f {
            sws_freeContext(context)
            context = sws_getContext(Int32(w), Int32(h), f, Int32(width), Int32(height), format, flags, nil, nil, nil)
            guard context != nil else {
                let name = av_get_pix_fmt_name(f).map { String(cString: $0) } ?? "\(f.rawValue)"
                throw MediaError(.unsupportedCodec, operation: "sws_getContext",
                                 detail: "cannot convert \(w)x\(h) \(name) pictures")
            }
            source = (w, h, f)
            applyColorDetails(input)
        }
        let rc = sws_scale(context, UnsafePointer(OpaquePointer(input.dataPointers)), input.linesizePointer, 0, Int32(h),
                           output.dataPointers, output.linesizePointer)
        try check(rc, "sws_scale")
    }

    /// Tells sws the source's YUV matrix and range (untagged: BT.709 for HD, BT.601 below), and
    /// that YUV output is BT.709 limited range. Matters for YUV<->RGB and for range conversion.
    private func applyColorDetails(_ input: Frame) {
        let space = input.pointer.pointee.colorspace
        let fullRange = input.pointer.pointee.color_range == AVCOL_RANGE_JPEG
            || [AV_PIX_FMT_YUVJ420P, AV_PIX_FMT_YUVJ422P, AV_PIX_FMT_YUVJ444P].contains(input.pixelFormat)
        let sourceMatrix: Int32 = space == AVCOL_SPC_UNSPECIFIED || space == AVCOL_SPC_RGB
            ? (input.height >= 720 ? SWS_CS_ITU709 : SWS_CS_ITU601) : Int32(space.rawValue)
        let outputIsRGB = av_pix_fmt_desc_get(format).map { $0.pointee.flags & UInt64(AV_PIX_FMT_FLAG_RGB) != 0 } ?? false
        let outputFullRange = outputIsRGB || format == AV_PIX_FMT_YUVJ420P
        sws_setColorspaceDetails(context, sws_getCoefficients(sourceMatrix), fullRange ? 1 : 0,
                                 sws_getCoefficients(SWS_CS_ITU709), outputFullRange ? 1 : 0, 0, 1 << 16, 1 << 16)
    }
}
