#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif
import Logging
import Synchronization

/// Where JSON log lines go: each call gets one complete line, newline included.
public protocol LogLineSink: Sendable {
    func write(_ line: [UInt8])
}

/// Standard error, one `write(2)` per line under a lock, so lines from many threads never interleave.
public final class StandardErrorSink: LogLineSink {
    public static let shared = StandardErrorSink()
    private let lock = Mutex(())

    public func write(_ line: [UInt8]) {
        lock.withLock { _ in
            line.withUnsafeBytes { raw in
                var offset = 0
                while offset < raw.count {
                    let written = systemWrite(2, raw.baseAddress! + offset, raw.count - offset)
                    if written > 0 {
                        offset += written
                    } else if written < 0 && errno == EINTR {
                        continue
                    } else {
                        return
                    }
                }
            }
        }
    }
}

@inline(__always)
private func systemWrite(_ fd: Int32, _ buffer: UnsafeRawPointer, _ count: Int) -> Int {
    #if canImport(Glibc)
        return Glibc.write(fd, buffer, count)
    #else
        return Darwin.write(fd, buffer, count)
    #endif
}

/// A swift-log handler that writes one JSON object per line:
/// `{"time":"2026-11-23T12:00:00.123Z","level":"info","label":"moments","message":"job started","job":"…","worker":"0"}`.
/// Metadata (the logger's, the provider's, the call's; the call wins) is flattened into the object
/// with its own keys, `job` and `request_id` among them; a key that would shadow `time`, `level`,
/// `label` or `message` is written with a `meta_` prefix. Nested metadata stays nested (arrays and
/// objects of strings).
public struct JSONLogHandler: LogHandler {
    public let label: String
    public var logLevel: Logger.Level = .info
    public var metadata: Logger.Metadata = [:]
    public var metadataProvider: Logger.MetadataProvider?
    private let sink: any LogLineSink

    public init(
        label: String, sink: any LogLineSink = StandardErrorSink.shared,
        metadataProvider: Logger.MetadataProvider? = nil
    ) {
        self.label = label
        self.sink = sink
        self.metadataProvider = metadataProvider
    }

    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    public func log(event: LogEvent) {
        var merged = metadata
        if let provided = metadataProvider?.get() { merged.merge(provided) { _, new in new } }
        if let own = event.metadata { merged.merge(own) { _, new in new } }
        sink.write(
            Self.line(time: Self.now(), level: event.level, label: label, message: "\(event.message)", metadata: merged)
        )
    }

    static let reserved: Set<String> = ["time", "level", "label", "message"]

    /// The JSON line (keys: time, level, label, message, then the metadata sorted by key).
    static func line(time: String, level: Logger.Level, label: String, message: String, metadata: Logger.Metadata)
        -> [UInt8]
    {
        var out: [UInt8] = []
        out.reserveCapacity(128 + message.utf8.count)
        out.append(UInt8(ascii: "{"))
        appendMember("time", .string(time), to: &out, first: true)
        appendMember("level", .string(level.rawValue), to: &out)
        appendMember("label", .string(label), to: &out)
        appendMember("message", .string(message), to: &out)
        for key in metadata.keys.sorted() {
            appendMember(reserved.contains(key) ? "meta_" + key : key, metadata[key]!, to: &out)
        }
        out.append(contentsOf: "}\n".utf8)
        return out
    }

    private static func appendMember(
        _ key: String, _ value: Logger.Metadata.Value, to out: inout [UInt8], first: Bool = false
    ) {
        if !first { out.append(UInt8(ascii: ",")) }
        appendString(key, to: &out)
        out.append(UInt8(ascii: ":"))
        appendValue(value, to: &out)
    }

    private static func appendValue(_ value: Logger.Metadata.Value, to out: inout [UInt8]) {
        switch value {
        case .string(let text): appendString(text, to: &out)
        case .stringConvertible(let convertible): appendString(convertible.description, to: &out)
        case .array(let values):
            out.append(UInt8(ascii: "["))
            for (index, element) in values.enumerated() {
                if index > 0 { out.append(UInt8(ascii: ",")) }
                appendValue(element, to: &out)
            }
            out.append(UInt8(ascii: "]"))
        case .dictionary(let dictionary):
            out.append(UInt8(ascii: "{"))
            for (index, key) in dictionary.keys.sorted().enumerated() {
                appendMember(key, dictionary[key]!, to: &out, first: index == 0)
            }
            out.append(UInt8(ascii: "}"))
        }
    }

    /// A JSON string: quotes, backslashes and control characters escaped; UTF-8 passed through.
    static func appendString(_ text: String, to out: inout [UInt8]) {
        let hex: [UInt8] = Array("0123456789abcdef".utf8)
        out.append(UInt8(ascii: "\""))
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "\""): out.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "\"")])
            case UInt8(ascii: "\\"): out.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "\\")])
            case 0x0A: out.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "n")])
            case 0x0D: out.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "r")])
            case 0x09: out.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "t")])
            case 0..<0x20, 0x7F:
                out.append(contentsOf: Array("\\u00".utf8))
                out.append(hex[Int(byte >> 4)])
                out.append(hex[Int(byte & 0xF)])
            default: out.append(byte)
            }
        }
        out.append(UInt8(ascii: "\""))
    }

    /// Now in ISO 8601, UTC, milliseconds: 2026-11-23T12:00:00.123Z (`timestamp` of the real-time clock).
    static func now() -> String {
        var spec = timespec()
        clock_gettime(CLOCK_REALTIME, &spec)
        return timestamp(seconds: Int(spec.tv_sec), milliseconds: Int(spec.tv_nsec) / 1_000_000)
    }

    public static func timestamp(seconds: Int, milliseconds: Int) -> String {
        var time = time_t(seconds)
        var parts = tm()
        gmtime_r(&time, &parts)
        func pad(_ value: Int32, _ width: Int) -> String {
            let text = String(value)
            return String(repeating: "0", count: max(0, width - text.count)) + text
        }
        return "\(pad(parts.tm_year + 1900, 4))-\(pad(parts.tm_mon + 1, 2))-\(pad(parts.tm_mday, 2))T"
            + "\(pad(parts.tm_hour, 2)):\(pad(parts.tm_min, 2)):\(pad(parts.tm_sec, 2)).\(pad(Int32(milliseconds), 3))Z"
    }
}

/// The process's log output, chosen once at start (`log.format`).
public enum LogOutput {
    private static let bootstrapped = Atomic<Bool>(false)

    /// `json`: every Logger made from now on writes `JSONLogHandler` lines to standard error;
    /// otherwise swift-log's default text lines stay. Once per process; later calls do nothing
    /// (swift-log allows one bootstrap).
    public static func bootstrap(json: Bool) {
        guard json,
            bootstrapped.compareExchange(expected: false, desired: true, ordering: .acquiringAndReleasing).exchanged
        else { return }
        LoggingSystem.bootstrap { label in JSONLogHandler(label: label) }
    }
}
