import Foundation
#if canImport(FoundationXML)
    import FoundationXML
#endif

/// Why a timeline could not be read back.
public struct TimelineParseError: Error, Equatable, CustomStringConvertible {
    public var message: String
    public init(_ message: String) { self.message = message }
    public var description: String { message }
}

/// Readers for the exported formats (used by the tests; usable by callers). Each returns every
/// clip's full source range in frames, `sourceOut` exclusive, dissolve handles included: the
/// frames the clip contributes to the highlight, i.e. `TimelinePlan.Clip.sourceIn/sourceOut`.
public enum TimelineParse {
    /// Reads a CMX 3600 EDL. Timecodes are converted at `rate`; when it is nil the rate comes from
    /// a `* FRAME RATE: num/den` comment (written by `TimelineExport`), else from the FCM line
    /// (drop-frame: 30000/1001, or 60000/1001 when a frames field reaches 30; non-drop: 30, or 60
    /// when a frames field reaches 30). A two-line dissolve event (a zero-length cut to the
    /// outgoing clip, then `D nnn`) extends the outgoing clip by `nnn` frames.
    public static func edl(_ text: String, rate: TimelineRate? = nil) throws -> [(sourceIn: Int, sourceOut: Int)] {
        let parsed = try edlEvents(text)
        let highFrames = parsed.events.contains { $0.timecodes.contains { $0.frames >= 30 } }
        let effective =
            (rate ?? parsed.declared
            ?? {
                if parsed.dropFrame { return highFrames ? .ntsc60 : .ntsc30 }
                return TimelineRate(numerator: highFrames ? 60 : 30, denominator: 1)
            }()).reduced
        return try edlClips(parsed.events, rate: effective)
    }

    /// One event line of an EDL.
    struct EDLEvent {
        var number: Int
        var transition: String
        var duration: Int?
        var timecodes: [Timecode]
    }

    /// The event lines of an EDL, whether its FCM line says drop-frame, and its declared rate.
    static func edlEvents(_ text: String) throws -> (events: [EDLEvent], dropFrame: Bool, declared: TimelineRate?) {
        var events: [EDLEvent] = []
        var dropFrame = false
        var declared: TimelineRate?
        for (index, raw) in text.split(omittingEmptySubsequences: false, whereSeparator: \.isNewline).enumerated() {
            let line = raw.trimmingCharacters(in: .whitespaces)
            if line.uppercased().hasPrefix("FCM:") {
                dropFrame = !line.uppercased().contains("NON-DROP") && line.uppercased().contains("DROP")
                continue
            }
            if line.uppercased().hasPrefix("* FRAME RATE:") {
                let value = line.dropFirst("* FRAME RATE:".count).trimmingCharacters(in: .whitespaces)
                let parts = value.split(separator: "/")
                if parts.count == 2, let n = Int(parts[0]), let d = Int(parts[1]), n > 0, d > 0 {
                    declared = TimelineRate(numerator: n, denominator: d)
                }
                continue
            }
            if let event = try edlEvent(line, lineNumber: index + 1) { events.append(event) }
        }
        return (events, dropFrame, declared)
    }

    /// An event line (`nnn reel V C|D [duration] srcIn srcOut recIn recOut`), nil for other lines.
    static func edlEvent(_ line: String, lineNumber: Int) throws -> EDLEvent? {
        let fields = line.split(whereSeparator: { $0 == " " || $0 == "\t" }).map(String.init)
        guard let first = fields.first, first.allSatisfy(\.isNumber), let number = Int(first) else { return nil }
        guard fields.count >= 8 else { throw TimelineParseError("EDL line \(lineNumber): too few fields") }
        let transition = fields[3].uppercased()
        var next = 4
        var duration: Int?
        if transition != "C" {
            guard let d = Int(fields[4]) else {
                throw TimelineParseError("EDL line \(lineNumber): transition \(transition) without a duration")
            }
            duration = d
            next = 5
        }
        guard fields.count >= next + 4 else { throw TimelineParseError("EDL line \(lineNumber): missing timecodes") }
        var timecodes: [Timecode] = []
        for field in fields[next..<(next + 4)] {
            guard let tc = Timecode(field) else {
                throw TimelineParseError("EDL line \(lineNumber): bad timecode \(field)")
            }
            timecodes.append(tc)
        }
        return EDLEvent(number: number, transition: transition, duration: duration, timecodes: timecodes)
    }

    /// The clips the events make at `rate`; a dissolve extends the outgoing clip.
    static func edlClips(_ events: [EDLEvent], rate effective: TimelineRate) throws -> [(sourceIn: Int, sourceOut: Int)]
    {
        func frame(_ tc: Timecode) throws -> Int {
            guard let f = tc.frame(rate: effective) else {
                throw TimelineParseError("EDL timecode \(tc) is not valid at \(effective) fps")
            }
            return f
        }

        var clips: [(sourceIn: Int, sourceOut: Int)] = []
        var pendingFrom: Int?
        for event in events {
            let srcIn = try frame(event.timecodes[0]), srcOut = try frame(event.timecodes[1])
            let recIn = try frame(event.timecodes[2]), recOut = try frame(event.timecodes[3])
            guard srcOut - srcIn == recOut - recIn else {
                throw TimelineParseError("EDL event \(event.number): source and record durations differ")
            }
            if event.transition == "C", srcIn == srcOut {
                pendingFrom = srcIn  // the outgoing side of a dissolve
                continue
            }
            if event.transition == "C" {
                clips.append((srcIn, srcOut))
            } else {
                guard let length = event.duration, !clips.isEmpty else {
                    throw TimelineParseError("EDL event \(event.number): a transition with nothing before it")
                }
                if let from = pendingFrom, from != clips[clips.count - 1].sourceOut {
                    throw TimelineParseError(
                        "EDL event \(event.number): the dissolve starts at a different frame than the outgoing clip ends"
                    )
                }
                clips[clips.count - 1].sourceOut += length
                clips.append((srcIn, srcOut))
            }
            pendingFrom = nil
        }
        return clips
    }

    /// Reads an FCPXML document with Foundation's `XMLParser`: the `asset-clip`s and
    /// `transition`s of the first sequence's spine. A transition extends the clip before it by
    /// the part after that clip's end and the clip after it by the part before that clip's offset.
    /// Throws when a time is not on the frame grid of the clip's (or the sequence's) format.
    public static func fcpxml(_ text: String) throws -> [(sourceIn: Int, sourceOut: Int)] {
        let reader = FCPXMLReader()
        let parser = XMLParser(data: Data(text.utf8))
        parser.delegate = reader
        guard parser.parse() else {
            throw TimelineParseError(
                "FCPXML is not well-formed: \(parser.parserError.map { "\($0)" } ?? "unknown error")")
        }
        if let error = reader.error { throw error }
        guard let sequenceFormat = reader.sequenceFormat else {
            throw TimelineParseError("FCPXML has no sequence format")
        }

        func frames(_ time: String?, format: String?, _ what: String) throws -> Int {
            guard let time else { return 0 }
            let id = format ?? sequenceFormat
            guard let frameDuration = reader.frameDurations[id] else {
                throw TimelineParseError("FCPXML format \(id) has no frameDuration")
            }
            guard let t = Self.rational(time), let fd = Self.rational(frameDuration), fd.0 > 0 else {
                throw TimelineParseError("FCPXML \(what): bad time \(time)")
            }
            // (t.n / t.d) / (fd.n / fd.d) = t.n * fd.d / (t.d * fd.n)
            let numerator = t.0 * fd.1, denominator = t.1 * fd.0
            guard denominator != 0, numerator % denominator == 0 else {
                throw TimelineParseError("FCPXML \(what) \(time) is not a whole number of \(frameDuration) frames")
            }
            return numerator / denominator
        }

        var clips: [(sourceIn: Int, sourceOut: Int)] = []
        var previousRecordEnd = 0
        var pending: (start: Int, end: Int)?
        for item in reader.spine {
            let offset = try frames(item.attributes["offset"], format: sequenceFormat, "offset")
            let duration = try frames(item.attributes["duration"], format: sequenceFormat, "duration")
            if item.name == "transition" {
                guard !clips.isEmpty else { throw TimelineParseError("FCPXML transition before any clip") }
                let end = offset + duration
                guard end >= previousRecordEnd, offset <= previousRecordEnd else {
                    throw TimelineParseError(
                        "FCPXML transition at \(offset) does not overlap the cut at \(previousRecordEnd)")
                }
                clips[clips.count - 1].sourceOut += end - previousRecordEnd
                pending = (offset, end)
                continue
            }
            let format = item.attributes["format"]
            let start = try frames(item.attributes["start"], format: format, "start")
            let length = try frames(item.attributes["duration"], format: format, "duration")
            var sourceIn = start
            if let transition = pending {
                guard offset >= transition.start, offset <= transition.end else {
                    throw TimelineParseError("FCPXML clip at \(offset) does not meet its transition")
                }
                sourceIn -= offset - transition.start
                pending = nil
            }
            clips.append((sourceIn, start + length))
            previousRecordEnd = offset + length
        }
        return clips
    }

    /// "1001/30000s", "3s", "0s" as (numerator, denominator).
    static func rational(_ text: String) -> (Int, Int)? {
        guard text.hasSuffix("s") else { return nil }
        let body = text.dropLast()
        let parts = body.split(separator: "/", omittingEmptySubsequences: false)
        switch parts.count {
        case 1: return Int(parts[0]).map { ($0, 1) }
        case 2:
            guard let n = Int(parts[0]), let d = Int(parts[1]), d > 0 else { return nil }
            return (n, d)
        default: return nil
        }
    }
}

/// Collects what `TimelineParse.fcpxml` needs from an FCPXML document.
final class FCPXMLReader: NSObject, XMLParserDelegate {
    struct Item { var name: String; var attributes: [String: String] }

    /// Format id -> frameDuration.
    var frameDurations: [String: String] = [:]
    var sequenceFormat: String?
    /// Direct children of the first sequence's spine, in order.
    var spine: [Item] = []
    var error: TimelineParseError?

    private var stack: [String] = []
    private var spineDepth: Int?
    private var sawSpine = false

    func parser(
        _ parser: XMLParser, didStartElement elementName: String, namespaceURI: String?,
        qualifiedName qName: String?, attributes attributeDict: [String: String] = [:]
    ) {
        switch elementName {
        case "format":
            if let id = attributeDict["id"], let fd = attributeDict["frameDuration"] { frameDurations[id] = fd }
        case "sequence":
            if sequenceFormat == nil { sequenceFormat = attributeDict["format"] }
        case "spine" where !sawSpine && stack.last == "sequence":
            sawSpine = true
            spineDepth = stack.count + 1
        default:
            if let depth = spineDepth, stack.count == depth, elementName == "asset-clip" || elementName == "transition"
            {
                spine.append(Item(name: elementName, attributes: attributeDict))
            } else if let depth = spineDepth, stack.count == depth {
                error = error ?? TimelineParseError("FCPXML spine holds an unsupported <\(elementName)>")
            }
        }
        stack.append(elementName)
    }

    func parser(
        _ parser: XMLParser, didEndElement elementName: String, namespaceURI: String?, qualifiedName qName: String?
    ) {
        stack.removeLast()
        if let depth = spineDepth, elementName == "spine", stack.count == depth - 1 { spineDepth = nil }
    }
}
