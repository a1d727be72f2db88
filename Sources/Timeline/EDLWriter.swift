import Foundation

/// Writes a CMX 3600 edit decision list.
///
/// Layout of an event line (fixed columns, as CMX 3600 prints them):
/// `NNN  REELNAME CHAN  T    DUR SRC-IN      SRC-OUT     REC-IN      REC-OUT`
/// - event number: 3 digits;
/// - reel: 8 characters derived from the file name (ASCII letters, digits, `_`; else `AX`);
/// - channels: `AA/V` (video plus audio channels 1 and 2, CMX 3600's code for picture with
///   stereo sound) when the source has audio, `V` otherwise;
/// - transition: `C` cut, or `D` dissolve with its duration in frames (3 digits);
/// - timecodes: drop-frame (`;`) at 29.97/59.94, non-drop otherwise. The source timecode counts
///   from 00:00:00:00 at the first frame of the file; the record side starts at 01:00:00:00.
///
/// A crossfaded join is a two-line event: a zero-length cut to the outgoing clip at the frame
/// where the dissolve starts, then a `D nnn` line for the incoming clip. The outgoing event stops
/// where the dissolve starts and the dissolve plays the outgoing clip's next `nnn` frames, so
/// record time is continuous and the list is `sum(clips) - nnn * joins` frames long, like the
/// rendered highlight. Each event is followed by `* FROM CLIP NAME:` / `* TO CLIP NAME:` comments
/// with the original file name and, for reframed clips, a `* REFRAME` comment. A
/// `* FRAME RATE: num/den` comment after the header records the exact rate (29.97 and 59.94 are
/// both "DROP FRAME" in the FCM line).
struct EDLWriter {
    let document: TimelineDocument
    let plan: TimelinePlan

    init(_ document: TimelineDocument) {
        self.document = document
        plan = TimelinePlan(document)
    }

    /// First record frame: 01:00:00:00 at the plan's rate.
    var recordStart: Int {
        let rate = plan.rate
        return Timecode(hours: 1, minutes: 0, seconds: 0, frames: 0, dropFrame: rate.isDropFrame).frame(rate: rate)
            ?? 3600 * rate.timecodeBase
    }

    func render() -> String {
        let rate = plan.rate
        let reel = TextEscaping.reelName(forFileName: document.sourceName)
        let channels = document.hasAudio ? "AA/V" : "V"
        let name = TextEscaping.edlLine(document.sourceName)
        let title = TextEscaping.edlLine(document.title, limit: 70)
        func tc(_ frame: Int) -> String { Timecode(frame: frame, rate: rate).description }
        func line(_ event: Int, _ transition: String, _ duration: Int?, _ src: (Int, Int), _ rec: (Int, Int)) -> String
        {
            let number = event < 1000 ? Self.pad(String(event), 3, "0", left: true) : String(event)
            let dur = duration.map { Self.pad(String($0), 3, "0", left: true) } ?? "   "
            return "\(number)  \(Self.pad(reel, 8)) \(Self.pad(channels, 5)) \(Self.pad(transition, 4)) \(dur) "
                + "\(tc(src.0)) \(tc(src.1)) \(tc(rec.0)) \(tc(rec.1))\n"
        }

        var out = "TITLE: \(title.isEmpty ? "MOMENTS HIGHLIGHT" : title)\n"
        out += rate.isDropFrame ? "FCM: DROP FRAME\n" : "FCM: NON-DROP FRAME\n"
        out += "* FRAME RATE: \(rate.numerator)/\(rate.denominator)\n"
        let start = recordStart
        for (i, clip) in plan.clips.enumerated() {
            let event = i + 1
            let sourceOut = clip.sourceOut - clip.transitionOut
            let recordIn = start + clip.recordIn
            let recordOut = start + clip.recordOut - clip.transitionOut
            out += "\n"
            if clip.transitionIn > 0, i > 0 {
                let previous = plan.clips[i - 1]
                let from = previous.sourceOut - previous.transitionOut
                out += line(event, "C", nil, (from, from), (recordIn, recordIn))
                out += line(event, "D", clip.transitionIn, (clip.sourceIn, sourceOut), (recordIn, recordOut))
                out += "* FROM CLIP NAME: \(name)\n"
                out += "* TO CLIP NAME: \(name)\n"
            } else {
                out += line(event, "C", nil, (clip.sourceIn, sourceOut), (recordIn, recordOut))
                out += "* FROM CLIP NAME: \(name)\n"
            }
            if let crop = clip.crop {
                let reframe = Reframe(
                    crop: crop, sourceWidth: document.sourceWidth, sourceHeight: document.sourceHeight,
                    outputWidth: document.outputWidth, outputHeight: document.outputHeight)
                func d(_ v: Double, _ digits: Int = 4) -> String { TextEscaping.decimal(v, digits: digits) }
                out +=
                    "* REFRAME CROP X=\(d(crop.x, 6)) Y=\(d(crop.y, 6)) W=\(d(crop.width, 6)) H=\(d(crop.height, 6))"
                    + " SOURCE=\(document.sourceWidth)x\(document.sourceHeight)"
                    + " OUTPUT=\(document.outputWidth)x\(document.outputHeight)"
                    + " SCALE=\(d(reframe.scale)) OFFSET=\(d(reframe.offsetX)),\(d(reframe.offsetY))\n"
            }
        }
        return out
    }

    /// `text` padded with `fill` to `width` characters (on the right unless `left`).
    static func pad(_ text: String, _ width: Int, _ fill: Character = " ", left: Bool = false) -> String {
        let missing = max(0, width - text.count)
        let padding = String(repeating: fill, count: missing)
        return left ? padding + text : text + padding
    }
}
