import Foundation

/// Edits the header boxes of an MP4 in place, to build the lying files hostile uploads are made
/// of (a header claiming another duration, a billion-tick timescale, one-tick frames) from a
/// valid file written by `Synth`. Only fixed-size fields are overwritten: box sizes never change.
public struct MP4Patch {
    public private(set) var data: Data

    public init(_ data: Data) { self.data = data }

    public init(contentsOf path: String) throws { data = try Data(contentsOf: URL(fileURLWithPath: path)) }

    public func write(to path: String) throws { try data.write(to: URL(fileURLWithPath: path)) }

    /// A box: where its payload starts and ends.
    public struct Box { public var type: String; public var start: Int; public var payload: Int; public var end: Int }

    /// The child boxes of the byte range `range` (the whole file when nil).
    public func boxes(in range: Range<Int>? = nil) -> [Box] {
        let range = range ?? 0..<data.count
        var result: [Box] = []
        var at = range.lowerBound
        while at + 8 <= range.upperBound {
            var size = Int(u32(at))
            var header = 8
            if size == 1, at + 16 <= range.upperBound { size = Int(u64(at + 8)); header = 16 }
            if size == 0 { size = range.upperBound - at }
            guard size >= header, at + size <= range.upperBound else { break }
            let type = String(decoding: data[(at + 4)..<(at + 8)], as: UTF8.self)
            result.append(Box(type: type, start: at, payload: at + header, end: at + size))
            at += size
        }
        return result
    }

    /// The first box along `path` (e.g. ["moov", "mvhd"]) under `parent`.
    public func find(_ path: [String], in parent: Box? = nil) -> Box? {
        var current = parent
        for name in path {
            let range = current.map { $0.payload..<$0.end }
            guard let next = boxes(in: range).first(where: { $0.type == name }) else { return nil }
            current = next
        }
        return current
    }

    /// The `trak` boxes whose handler is `handler` ("vide", "soun").
    public func tracks(_ handler: String) -> [Box] {
        guard let moov = find(["moov"]) else { return [] }
        return boxes(in: moov.payload..<moov.end).filter { trak in
            guard trak.type == "trak", let hdlr = find(["mdia", "hdlr"], in: trak) else { return false }
            return String(decoding: data[(hdlr.payload + 8)..<(hdlr.payload + 12)], as: UTF8.self) == handler
        }
    }

    // MARK: Fields

    /// mvhd/mdhd: (timescale offset, duration offset, duration is 64-bit).
    private func timeFields(_ box: Box) -> (Int, Int, Bool) {
        let version = data[box.payload]
        return version == 1 ? (box.payload + 20, box.payload + 24, true) : (box.payload + 12, box.payload + 16, false)
    }

    public func timescale(of box: Box) -> UInt32 { u32(timeFields(box).0) }

    public mutating func setTimescale(of box: Box, _ value: UInt32) { put32(timeFields(box).0, value) }

    /// Sets a mvhd/mdhd duration in seconds of its own timescale.
    public mutating func setDuration(of box: Box, seconds: Double) {
        let (scale, at, wide) = timeFields(box)
        let ticks = UInt64(max(0, seconds) * Double(u32(scale)))
        if wide { put64(at, ticks) } else { put32(at, UInt32(min(ticks, UInt64(UInt32.max)))) }
    }

    /// Sets a tkhd duration (in the movie timescale `movieTimescale`).
    public mutating func setTrackDuration(of tkhd: Box, seconds: Double, movieTimescale: UInt32) {
        let wide = data[tkhd.payload] == 1
        let at = tkhd.payload + (wide ? 28 : 20)
        let ticks = UInt64(max(0, seconds) * Double(movieTimescale))
        if wide { put64(at, ticks) } else { put32(at, UInt32(min(ticks, UInt64(UInt32.max)))) }
    }

    /// Every sample delta of an stts box set to `delta`.
    public mutating func setSampleDeltas(of stts: Box, _ delta: UInt32) {
        let count = Int(u32(stts.payload + 4))
        for i in 0..<count where stts.payload + 8 + 8 * i + 8 <= stts.end { put32(stts.payload + 8 + 8 * i + 4, delta) }
    }

    // MARK: Whole-file edits

    /// Every edit list turned into a `free` box, so that the sample tables alone say what plays
    /// (FFmpeg would otherwise cut the media to the edit's length).
    public mutating func dropEditLists() {
        guard let moov = find(["moov"]) else { return }
        for trak in boxes(in: moov.payload..<moov.end) where trak.type == "trak" {
            if let edts = find(["edts"], in: trak) {
                data.replaceSubrange((edts.start + 4)..<(edts.start + 8), with: Array("free".utf8))
            }
        }
    }

    /// The video track's media timescale set to `timescale` and every frame given `delta` ticks
    /// (edit lists dropped: they are in the old time scale).
    public mutating func retimeVideo(timescale: UInt32? = nil, sampleDelta: UInt32) {
        dropEditLists()
        for trak in tracks("vide") {
            if let timescale, let mdhd = find(["mdia", "mdhd"], in: trak) { setTimescale(of: mdhd, timescale) }
            if let stts = find(["mdia", "minf", "stbl", "stts"], in: trak) { setSampleDeltas(of: stts, sampleDelta) }
        }
    }

    /// Every header duration (mvhd, each tkhd and mdhd) set to claim `seconds`; the samples are
    /// untouched and edit lists dropped, so the whole media still plays.
    public mutating func claimDuration(_ seconds: Double) {
        dropEditLists()
        guard let mvhd = find(["moov", "mvhd"]) else { return }
        setDuration(of: mvhd, seconds: seconds)
        let movieScale = timescale(of: mvhd)
        guard let moov = find(["moov"]) else { return }
        for trak in boxes(in: moov.payload..<moov.end) where trak.type == "trak" {
            if let tkhd = find(["tkhd"], in: trak) {
                setTrackDuration(of: tkhd, seconds: seconds, movieTimescale: movieScale)
            }
            if let mdhd = find(["mdia", "mdhd"], in: trak) { setDuration(of: mdhd, seconds: seconds) }
        }
    }

    // MARK: Bytes

    func u32(_ at: Int) -> UInt32 { data[at..<(at + 4)].reduce(0) { $0 << 8 | UInt32($1) } }
    func u64(_ at: Int) -> UInt64 { data[at..<(at + 8)].reduce(0) { $0 << 8 | UInt64($1) } }
    mutating func put32(_ at: Int, _ v: UInt32) {
        for i in 0..<4 { data[at + i] = UInt8(truncatingIfNeeded: v >> (24 - 8 * UInt32(i))) }
    }
    mutating func put64(_ at: Int, _ v: UInt64) {
        for i in 0..<8 { data[at + i] = UInt8(truncatingIfNeeded: v >> (56 - 8 * UInt64(i))) }
    }
}
