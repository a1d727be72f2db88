/// What the highlight favours. `auto`: people first where there are any, the lively moments
/// otherwise; `people`: faces above all; `action`: motion and sound, faces not preferred (the
/// crop still keeps them in frame).
public enum HighlightFocus: String, Sendable, Codable, CaseIterable {
    case auto, people, action
}
