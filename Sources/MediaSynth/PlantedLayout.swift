extension SynthSpec {
    /// The planted-highlight layout, 60 s: lively parts among dull, black, frozen and blurred ones,
    /// and a repeat of the first lively part (46–51 s is the footage of 6–11 s). A highlight of it
    /// should be lively, never show a defect, and not show the repeated footage twice. Used by the
    /// highlight tests and by `moments sample --planted` (for `scripts/bench-analysis`).
    public static func planted(width: Int = 320, height: Int = 180) -> SynthSpec {
        var spec = SynthSpec()
        spec.width = width
        spec.height = height
        spec.duration = 60
        spec.barcode = false
        spec.preset = "veryfast"
        spec.parts = [
            SynthPart(start: 0, kind: .dull, seed: 1),
            SynthPart(start: 6, kind: .lively, seed: 2),
            SynthPart(start: 11, kind: .black, seed: 0),
            SynthPart(start: 15, kind: .dull, seed: 3),
            SynthPart(start: 21, kind: .lively, seed: 4),
            SynthPart(start: 26, kind: .frozen, seed: 5),
            SynthPart(start: 31, kind: .blurred, seed: 6),
            SynthPart(start: 36, kind: .lively, seed: 7),
            SynthPart(start: 41, kind: .dull, seed: 8),
            SynthPart(start: 46, kind: .lively, seed: 2),
            SynthPart(start: 51, kind: .lively, seed: 9),
            SynthPart(start: 56, kind: .dull, seed: 10)
        ]
        return spec
    }
}
