import CFFmpeg

/// Owns a SwsContext (sws_freeContext in deinit): converts pictures between sizes and pixel formats.
/// The context is recreated only when the source geometry or format changes.
public final class Scaler {
    private var context: OpaquePointer?
    private var source = (width: 0, height: 0, format: AV_PIX_FMT_NONE)
    public let width: Int
    public let height: Int
    public let format: AVPixelFormat
    public let flags: Int32

    public init(width: Int, height: Int, format: AVPixelFormat, flags: Int32 = SWS_BICUBIC) {
        self.width = width
        self.height = height
        self.format = format
        self.flags = flags
    }

    deinit { sws_freeContext(context) }

    /// Scales `input` (or the `crop` window of it) into `output`, which must already have buffers
    /// of this scaler's size/format.
    public func scale(_ input: Frame, into output: Frame, crop: CropRect? = nil) throws(MediaError) {
        let w = crop?.width ?? input.width, h = crop?.height ?? input.height, f = input.pixelFormat
        if context == nil || source.width != w || source.height != h || source.format != f {
            sws_freeContext(context)
            context = sws_getContext(Int32(w), Int32(h), f, Int32(width), Int32(height), format, flags, nil, nil, nil)
            guard context != nil else {
                let name = av_get_pix_fmt_name(f).map { String(cString: $0) } ?? "\(f.rawValue)"
                throw MediaError(
                    .unsupportedCodec, operation: "sws_getContext",
                    detail: "cannot convert \(w)x\(h) \(name) pictures")
            }
            source = (w, h, f)
            applyColorDetails(input)
        }
        if let crop {
            try withCroppedPlanes(input, crop) { planes in
                sws_scale(
                    context, planes, input.linesizePointer, 0, Int32(h), output.dataPointers, output.linesizePointer)
            }
        } else {
            let rc = sws_scale(
                context, UnsafePointer(OpaquePointer(input.dataPointers)), input.linesizePointer, 0, Int32(h),
                output.dataPointers, output.linesizePointer)
            try check(rc, "sws_scale")
        }
    }

    /// The plane pointers of `input` moved to the crop's origin, as FFmpeg's own frame cropping
    /// computes them (av_frame_apply_cropping): per plane, the first component found in it gives
    /// the bytes per pixel, chroma planes move by their subsampling, a palette stays where it is;
    /// bit-packed and hardware formats are refused. On the stack: no allocation per frame.
    private func withCroppedPlanes(
        _ input: Frame, _ crop: CropRect,
        _ body: (UnsafePointer<UnsafePointer<UInt8>?>) -> Int32
    ) throws(MediaError) {
        guard let descriptor = av_pix_fmt_desc_get(input.pixelFormat),
            crop.x >= 0, crop.y >= 0, crop.width > 0, crop.height > 0,
            crop.x <= input.width - crop.width, crop.y <= input.height - crop.height
        else {
            throw MediaError(
                .invalidRange, operation: "crop",
                detail: "the crop window \(crop) is outside the \(input.width)x\(input.height) picture")
        }
        let d = descriptor.pointee
        if d.flags & UInt64(AV_PIX_FMT_FLAG_BITSTREAM | AV_PIX_FMT_FLAG_HWACCEL) != 0 {
            throw MediaError(
                .unsupportedCodec, operation: "crop", detail: "pictures of this pixel format cannot be reframed")
        }
        var offsets: (Int, Int, Int, Int) = (0, 0, 0, 0)
        withUnsafePointer(to: d.comp) { comps in
            comps.withMemoryRebound(to: AVComponentDescriptor.self, capacity: 4) { c in
                for plane in 0..<4 {
                    if plane == 1, d.flags & UInt64(AV_PIX_FMT_FLAG_PAL) != 0 { break }
                    guard
                        let step = (0..<Int(d.nb_components)).first(where: { Int(c[$0].plane) == plane }).map({
                            Int(c[$0].step)
                        })
                    else { continue }
                    let chroma = plane == 1 || plane == 2
                    let x = chroma ? crop.x >> Int(d.log2_chroma_w) : crop.x
                    let y = chroma ? crop.y >> Int(d.log2_chroma_h) : crop.y
                    let offset = y * input.linesize(plane) + x * step
                    switch plane {
                    case 0: offsets.0 = offset
                    case 1: offsets.1 = offset
                    case 2: offsets.2 = offset
                    default: offsets.3 = offset
                    }
                }
            }
        }
        let planes: (UnsafePointer<UInt8>?, UnsafePointer<UInt8>?, UnsafePointer<UInt8>?, UnsafePointer<UInt8>?) = (
            input.data(0).map { UnsafePointer($0 + offsets.0) },
            input.data(1).map { UnsafePointer($0 + offsets.1) },
            input.data(2).map { UnsafePointer($0 + offsets.2) },
            input.data(3).map { UnsafePointer($0 + offsets.3) }
        )
        let rc = withUnsafePointer(to: planes) { tuple in
            tuple.withMemoryRebound(to: UnsafePointer<UInt8>?.self, capacity: 4) { body($0) }
        }
        try check(rc, "sws_scale (cropped)")
    }

    /// Tells sws the source's YUV matrix and range (untagged: BT.709 for HD, BT.601 below), and
    /// that YUV output is BT.709 limited range. Matters for YUV<->RGB and for range conversion.
    private func applyColorDetails(_ input: Frame) {
        let space = input.pointer.pointee.colorspace
        let fullRange =
            input.pointer.pointee.color_range == AVCOL_RANGE_JPEG
            || [AV_PIX_FMT_YUVJ420P, AV_PIX_FMT_YUVJ422P, AV_PIX_FMT_YUVJ444P].contains(input.pixelFormat)
        let sourceMatrix: Int32 =
            space == AVCOL_SPC_UNSPECIFIED || space == AVCOL_SPC_RGB
            ? (input.height >= 720 ? SWS_CS_ITU709 : SWS_CS_ITU601) : Int32(space.rawValue)
        let outputIsRGB =
            av_pix_fmt_desc_get(format).map { $0.pointee.flags & UInt64(AV_PIX_FMT_FLAG_RGB) != 0 } ?? false
        let outputFullRange = outputIsRGB || format == AV_PIX_FMT_YUVJ420P
        sws_setColorspaceDetails(
            context, sws_getCoefficients(sourceMatrix), fullRange ? 1 : 0,
            sws_getCoefficients(SWS_CS_ITU709), outputFullRange ? 1 : 0, 0, 1 << 16, 1 << 16)
    }
}
