import CFFmpeg
import Foundation

/// The bytes of one input: an open file read through its descriptor, or bytes in memory. FFmpeg
/// reads them through `InputIO` (a custom AVIOContext), so no demuxer can open anything else.
public final class InputSource {
    private enum Storage {
        case file(Int32)
        case memory([UInt8])
    }

    private let storage: Storage
    public let size: Int64
    /// What error messages name: the path, or a label for bytes in memory.
    public let name: String
    public private(set) var position: Int64 = 0

    /// Opens `path` read-only; it must be a regular file.
    public init(path: String) throws(MediaError) {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        if fd < 0 {
            let code = errno
            if code == ENOENT {
                throw MediaError(.fileNotFound, operation: "open", path: path, detail: "file not found")
            }
            throw MediaError(.io, operation: "open", path: path, detail: "cannot read the file")
        }
        var info = stat()
        guard fstat(fd, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG else {
            close(fd)
            throw MediaError(.io, operation: "fstat", path: path, detail: "not a regular file")
        }
        storage = .file(fd)
        size = Int64(info.st_size)
        name = path
    }

    /// Bytes in memory (the probe fuzzer; tests).
    public init(bytes: [UInt8], name: String = "memory") {
        storage = .memory(bytes)
        size = Int64(bytes.count)
        self.name = name
    }

    deinit {
        if case .file(let fd) = storage { close(fd) }
    }

    /// Reads up to `count` bytes at `offset` without moving the position; the count read, or -1.
    public func read(at offset: Int64, into buffer: UnsafeMutableRawPointer, count: Int) -> Int {
        guard offset >= 0, count >= 0 else { return -1 }
        switch storage {
        case .file(let fd):
            while true {
                let n = pread(fd, buffer, count, off_t(offset))
                if n < 0 && errno == EINTR { continue }
                return n
            }
        case .memory(let bytes):
            guard offset < Int64(bytes.count) else { return 0 }
            let n = min(count, bytes.count - Int(offset))
            bytes.withUnsafeBytes { buffer.copyMemory(from: $0.baseAddress! + Int(offset), byteCount: n) }
            return n
        }
    }

    /// FFmpeg's read_packet: sequential reads from the position.
    public func readNext(into buffer: UnsafeMutablePointer<UInt8>, count: Int32) -> Int32 {
        let n = read(at: position, into: buffer, count: Int(max(0, count)))
        if n < 0 { return moments_averror(EIO) }
        if n == 0 { return FFmpegError.eof }
        position += Int64(n)
        return Int32(n)
    }

    /// FFmpeg's seek: SEEK_SET/CUR/END, or AVSEEK_SIZE for the size.
    public func seek(offset: Int64, whence: Int32) -> Int64 {
        let mode = whence & ~Int32(AVSEEK_FORCE)
        if mode == Int32(AVSEEK_SIZE) { return size }
        let target: Int64
        switch mode {
        case SEEK_SET: target = offset
        case SEEK_CUR: target = position &+ offset
        case SEEK_END: target = size &+ offset
        default: return Int64(moments_averror(EINVAL))
        }
        guard target >= 0 else { return Int64(moments_averror(EINVAL)) }
        position = target
        return target
    }
}

/// An AVIOContext reading an InputSource (avio_context_free and its buffer freed in deinit).
public final class InputIO {
    public let pointer: UnsafeMutablePointer<AVIOContext>
    public let source: InputSource
    public static let bufferSize: Int32 = 64 * 1024

    public init(source: InputSource) throws(MediaError) {
        self.source = source
        guard let buffer = av_malloc(Int(InputIO.bufferSize))?.assumingMemoryBound(to: UInt8.self) else {
            throw MediaError(.ffmpeg, operation: "av_malloc", path: source.name, detail: "out of memory")
        }
        let opaque = Unmanaged.passUnretained(source).toOpaque()
        guard
            let context = avio_alloc_context(
                buffer, InputIO.bufferSize, 0, opaque,
                { opaque, buffer, size in
                    guard let opaque, let buffer else { return moments_averror(EINVAL) }
                    return Unmanaged<InputSource>.fromOpaque(opaque).takeUnretainedValue().readNext(
                        into: buffer, count: size)
                }, nil,
                { opaque, offset, whence in
                    guard let opaque else { return Int64(moments_averror(EINVAL)) }
                    return Unmanaged<InputSource>.fromOpaque(opaque).takeUnretainedValue().seek(
                        offset: offset, whence: whence)
                })
        else {
            av_free(buffer)
            throw MediaError(.ffmpeg, operation: "avio_alloc_context", path: source.name, detail: "out of memory")
        }
        pointer = context
    }

    deinit {
        // FFmpeg may have replaced the buffer; free whichever it holds now.
        av_freep(&pointer.pointee.buffer)
        var p: UnsafeMutablePointer<AVIOContext>? = pointer
        avio_context_free(&p)
    }
}
