import NIOCore

/// A streaming multipart/form-data scanner (RFC 7578 / RFC 2046 §5.1). Fed the body chunk by chunk,
/// it reports each part's headers, its content as slices of the input (no copy per fragment), the
/// end of each part and the closing delimiter.
///
/// Written here because multipart-kit 4.7's parser (the version available) allocates a buffer at
/// every CR byte of the content, about every 256 bytes of video, which made uploads CPU-bound.
public struct FormDataScanner {
    public enum Event {
        case part(headers: [(name: String, value: String)])
        case data(ByteBuffer)
        case partEnd
        case end
    }

    public struct Malformed: Error { public var reason: String }

    /// Part headers larger than this are refused.
    public static let maxHeaderBytes = 16 * 1024

    private enum State { case preamble, afterDelimiter, headers, body, epilogue }

    private let delimiter: [UInt8]
    private var state = State.preamble
    private var buffer = ByteBuffer()

    public init(boundary: String) {
        delimiter = Array("\r\n--\(boundary)".utf8)
        // The first delimiter may start the body without a CRLF before it: supply one.
        buffer.writeStaticString("\r\n")
    }

    /// Whether the closing delimiter (`--boundary--`) has been seen.
    public var isComplete: Bool { state == .epilogue }

    public mutating func feed(_ chunk: ByteBuffer, _ emit: (Event) throws -> Void) throws {
        if state == .epilogue { return }  // anything after the closing delimiter is ignored
        buffer.discardReadBytes()
        var chunk = chunk
        buffer.writeBuffer(&chunk)
        while true {
            switch state {
            case .preamble:
                guard let at = find(delimiter) else {
                    // Keep only what could be the start of the delimiter.
                    buffer.moveReaderIndex(forwardBy: max(0, buffer.readableBytes - (delimiter.count - 1)))
                    return
                }
                buffer.moveReaderIndex(forwardBy: at + delimiter.count)
                state = .afterDelimiter
            case .afterDelimiter:
                guard buffer.readableBytes >= 2, let pair = buffer.getBytes(at: buffer.readerIndex, length: 2) else {
                    return
                }
                if pair == [0x2D, 0x2D] {  // "--": the closing delimiter
                    buffer.moveReaderIndex(forwardBy: buffer.readableBytes)
                    state = .epilogue
                    try emit(.end)
                    return
                }
                guard pair == [0x0D, 0x0A] else { throw Malformed(reason: "a boundary is not followed by CRLF") }
                buffer.moveReaderIndex(forwardBy: 2)
                state = .headers
            case .headers:
                let headers: [(name: String, value: String)]
                if buffer.readableBytes >= 2, buffer.getBytes(at: buffer.readerIndex, length: 2) == [0x0D, 0x0A] {
                    buffer.moveReaderIndex(forwardBy: 2)  // a part without headers
                    headers = []
                } else {
                    guard let end = find([0x0D, 0x0A, 0x0D, 0x0A]) else {
                        if buffer.readableBytes > Self.maxHeaderBytes {
                            throw Malformed(reason: "part headers too long")
                        }
                        return
                    }
                    guard end <= Self.maxHeaderBytes, let block = buffer.readString(length: end) else {
                        throw Malformed(reason: "part headers too long")
                    }
                    buffer.moveReaderIndex(forwardBy: 4)
                    headers = try Self.parseHeaders(block)
                }
                state = .body
                try emit(.part(headers: headers))
            case .body:
                if let at = find(delimiter) {
                    if at > 0, let slice = buffer.readSlice(length: at) { try emit(.data(slice)) }
                    buffer.moveReaderIndex(forwardBy: delimiter.count)
                    state = .afterDelimiter
                    try emit(.partEnd)
                } else {
                    // Everything but a possible start of the delimiter is content.
                    let safe = buffer.readableBytes - (delimiter.count - 1)
                    if safe > 0, let slice = buffer.readSlice(length: safe) { try emit(.data(slice)) }
                    return
                }
            case .epilogue:
                return
            }
        }
    }

    /// The offset (from the reader index) of `pattern` in the unread bytes.
    private func find(_ pattern: [UInt8]) -> Int? {
        buffer.withUnsafeReadableBytes { bytes -> Int? in
            let count = bytes.count, length = pattern.count
            guard count >= length, let base = bytes.baseAddress else { return nil }
            let first = pattern[0]
            var offset = 0
            while offset <= count - length {
                guard let hit = memchr(base + offset, Int32(first), count - length - offset + 1) else { return nil }
                let index = base.distance(to: UnsafeRawPointer(hit))
                if pattern.withUnsafeBytes({ memcmp(base + index, $0.baseAddress!, length) }) == 0 { return index }
                offset = index + 1
            }
            return nil
        }
    }

    public static func parseHeaders(_ block: String) throws -> [(name: String, value: String)] {
        var headers: [(name: String, value: String)] = []
        for line in block.split(separator: "\r\n", omittingEmptySubsequences: true) {
            guard let colon = line.firstIndex(of: ":"), colon != line.startIndex else {
                throw Malformed(reason: "a part header line has no name")
            }
            headers.append(
                (
                    line[..<colon].trimmingCharacters(in: .whitespaces).lowercased(),
                    line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
                ))
        }
        return headers
    }
}

#if canImport(Glibc)
    import Glibc
#endif
import Foundation
