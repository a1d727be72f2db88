import CFFmpeg

/// Owns one AVPacket (av_packet_free in deinit). Reused across reads: `unref()` between uses.
public final class Packet {
    public let pointer: UnsafeMutablePointer<AVPacket>

    public init() throws(MediaError) {
        guard let p = av_packet_alloc() else {
            throw MediaError(.ffmpeg, operation: "av_packet_alloc", detail: "out of memory")
        }
        pointer = p
    }

    deinit {
        var p: UnsafeMutablePointer<AVPacket>? = pointer
        av_packet_free(&p)
    }

    public var streamIndex: Int { Int(pointer.pointee.stream_index) }
    public var pts: Int64 { pointer.pointee.pts }
    public var dts: Int64 { pointer.pointee.dts }
    public var isKeyframe: Bool { pointer.pointee.flags & AV_PKT_FLAG_KEY != 0 }
    public var isCorrupt: Bool { pointer.pointee.flags & AV_PKT_FLAG_CORRUPT != 0 }
    public func unref() { av_packet_unref(pointer) }
}

extension Packet {
    /// Makes this packet another reference to `other`'s data (no copy of refcounted data).
    public func ref(_ other: Packet) throws(MediaError) {
        av_packet_unref(pointer)
        try check(av_packet_ref(pointer, other.pointer), "av_packet_ref")
    }
}
