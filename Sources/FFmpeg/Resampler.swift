import CFFmpeg

/// Owns a SwrContext (swr_free in deinit): converts decoded audio to a fixed rate, channel count and
/// sample format. Output goes to caller-owned planes; no allocation per call.
public final class Resampler {
    private var context: OpaquePointer?
    public let outputRate: Int
    public let outputChannels: Int
    public let outputFormat: AVSampleFormat

    public init(
        input decoder: UnsafeMutablePointer<AVCodecContext>, outputRate: Int, outputChannels: Int,
        outputFormat: AVSampleFormat
    ) throws(MediaError) {
        self.outputRate = outputRate
        self.outputChannels = outputChannels
        self.outputFormat = outputFormat
        var inputLayout = AVChannelLayout()
        if decoder.pointee.ch_layout.order == AV_CHANNEL_ORDER_UNSPEC || decoder.pointee.ch_layout.nb_channels == 0 {
            av_channel_layout_default(&inputLayout, max(1, decoder.pointee.ch_layout.nb_channels))
        } else {
            try check(av_channel_layout_copy(&inputLayout, &decoder.pointee.ch_layout), "av_channel_layout_copy")
        }
        defer { av_channel_layout_uninit(&inputLayout) }
        var outputLayout = AVChannelLayout()
        av_channel_layout_default(&outputLayout, Int32(outputChannels))
        defer { av_channel_layout_uninit(&outputLayout) }
        var ctx: OpaquePointer? = nil
        try check(
            swr_alloc_set_opts2(
                &ctx, &outputLayout, outputFormat, Int32(outputRate),
                &inputLayout, decoder.pointee.sample_fmt, decoder.pointee.sample_rate, 0, nil),
            "swr_alloc_set_opts2")
        context = ctx
        try check(swr_init(context), "swr_init")
    }

    deinit { swr_free(&context) }

    /// Drops buffered samples and filter state (after a seek).
    public func reset() throws(MediaError) {
        try check(swr_init(context), "swr_init")
    }

    /// An upper bound of the output samples for `inputSamples` more input samples.
    public func outputCapacity(forInput inputSamples: Int) -> Int {
        Int(swr_get_out_samples(context, Int32(inputSamples)))
    }

    /// Converts one decoded frame (nil flushes) into `planes` (one pointer per output plane; one for
    /// packed formats). Returns the number of samples written per channel.
    public func convert(_ frame: Frame?, into planes: UnsafeMutablePointer<UnsafeMutablePointer<UInt8>?>, capacity: Int)
        throws(MediaError) -> Int
    {
        let written: Int32
        if let frame {
            written = swr_convert(
                context, planes, Int32(capacity),
                UnsafeMutablePointer(mutating: UnsafePointer(OpaquePointer(frame.pointer.pointee.extended_data))),
                Int32(frame.sampleCount))
        } else {
            written = swr_convert(context, planes, Int32(capacity), nil, 0)
        }
        try check(written, "swr_convert")
        return Int(written)
    }
}
