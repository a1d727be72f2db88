import Foundation

/// Entry point: a highlight's segments as an editable timeline in one of the interchange formats.
public enum TimelineExport {
    /// The document as `format` (UTF-8 text). Every format is derived from the same frame
    /// layout (`TimelinePlan`), so their source in/out frames agree exactly.
    public static func render(_ document: TimelineDocument, as format: TimelineFormat) -> String {
        switch format {
        case .fcpxml: FCPXMLWriter(document).render()
        case .otio: OTIOWriter(document).render()
        case .edl: EDLWriter(document).render()
        }
    }

    /// The frame layout the formats are written from.
    public static func plan(_ document: TimelineDocument) -> TimelinePlan {
        TimelinePlan(document)
    }
}
