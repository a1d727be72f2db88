import Foundation

/// Splits a byte stream into lines; a line longer than `maxLine` marks the stream as broken. Each
/// byte is looked at once, whatever the lengths of the lines: only the new bytes are searched for a
/// newline, and a partial line is checked against the limit before it is kept.
struct LineReader {
    /// The start of a line whose newline has not come yet.
    var buffer = Data()
    var overflowed = false
    let maxLine: Int

    init(maxLine: Int = 32 << 20) { self.maxLine = maxLine }

    mutating func feed(_ bytes: ArraySlice<UInt8>) -> [Data] {
        guard !overflowed else { return [] }
        return bytes.withUnsafeBufferPointer { chunk -> [Data] in
            guard let base = chunk.baseAddress else { return [] }
            var lines: [Data] = []
            var start = 0
            while start < chunk.count, let found = memchr(base + start, 0x0A, chunk.count - start) {
                let newline = base.distance(to: found.assumingMemoryBound(to: UInt8.self))
                let part = UnsafeBufferPointer(rebasing: chunk[start..<newline])
                guard buffer.count + part.count <= maxLine else { return overflow(lines) }
                if buffer.isEmpty {
                    lines.append(Data(buffer: part))
                } else {
                    buffer.append(part)
                    lines.append(buffer)
                    buffer = Data()
                }
                start = newline + 1
            }
            let rest = UnsafeBufferPointer(rebasing: chunk[start...])
            guard buffer.count + rest.count <= maxLine else { return overflow(lines) }
            buffer.append(rest)
            return lines
        }
    }

    private mutating func overflow(_ lines: [Data]) -> [Data] {
        overflowed = true
        buffer = Data()
        return lines
    }
}
