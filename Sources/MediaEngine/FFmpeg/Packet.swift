import CFFmpeg

/// Owns one AVPacket (av_packet_free in deinit). Reused across reads: `unref()` between uses.
final class Packet {
    let pointer: UnsafeMutablePointer<AVPacket>

    init() throws(MediaError) {
        guard let p = av_packet_alloc() else {
            throw MediaError(.ffmpeg, operation: "av_packet_alloc", detail: "out of memory")
        }
        pointer = p
    }

    deinit {
        var p: UnsafeMutablePointer<AVPacket>? = pointer
        av_packet_free(&p)
    }

    var streamIndex: Int { Int(pointer.pointee.stream_index) }
    var pts: Int64 { pointer.pointee.pts }
    var dts: Int64 { pointer.pointee.dts }
    var isKeyframe: Bool { pointer.pointee.flags & AV_PKT_FLAG_KEY != 0 }
    var isCorrupt: Bool { pointer.pointee.flags & AV_PKT_FLAG_CORRUPT != 0 }
    func unref() { av_packet_unref(pointer) }
}

extension Packet {
    /// Makes this packet another reference to `other`'s data (no copy of refcounted data).
    func ref(_ other: Packet) throws(MediaError) {
        av_packet_unref(pointer)
        try check(av_packet_ref(pointer, other.pointer), "av_packet_ref")
    }
}
