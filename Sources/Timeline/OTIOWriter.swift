import Foundation

/// Writes an OpenTimelineIO JSON document (`.otio`): a `Timeline.1` whose `Stack.1` holds one
/// video `Track.1` and, when the source has audio, one audio `Track.1` with the same edit.
///
/// Each segment is a `Clip.2` with an `ExternalReference.1` to the original upload. Times are
/// `RationalTime.1` values in frames at the rate as a double (29.97002997002997 for 30000/1001).
/// A dissolve is a `Transition.1` of type `SMPTE_Dissolve` between two clips: as in OTIO's model
/// clips abut at the cut and `in_offset`/`out_offset` are the dissolve's frames before/after
/// the cut, taken from the clips' handles. The reframe is kept in each clip's `metadata` under
/// `moments` (OTIO has no standard transform schema).
struct OTIOWriter {
    let document: TimelineDocument
    let plan: TimelinePlan

    init(_ document: TimelineDocument) {
        self.document = document
        plan = TimelinePlan(document)
    }

    func render() -> String {
        var tracks: [JSON] = [track(name: "V1", kind: "Video")]
        if document.hasAudio { tracks.append(track(name: "A1", kind: "Audio")) }
        let timeline = JSON.object([
            ("OTIO_SCHEMA", .string("Timeline.1")),
            (
                "metadata",
                .object([
                    (
                        "moments",
                        .object([
                            ("source_name", .string(document.sourceName)),
                            ("rate", .string(plan.rate.description)),
                            ("source_size", .array([.int(document.sourceWidth), .int(document.sourceHeight)])),
                            ("output_size", .array([.int(document.outputWidth), .int(document.outputHeight)])),
                            ("crossfade_frames", .int(plan.transitionFrames))
                        ])
                    )
                ])
            ),
            ("name", .string(document.title)),
            ("global_start_time", .null),
            (
                "tracks",
                .object([
                    ("OTIO_SCHEMA", .string("Stack.1")),
                    ("metadata", .object([])),
                    ("name", .string("tracks")),
                    ("source_range", .null),
                    ("effects", .array([])),
                    ("markers", .array([])),
                    ("enabled", .bool(true)),
                    ("children", .array(tracks))
                ])
            )
        ])
        var out = ""
        timeline.write(to: &out, indent: 0)
        return out + "\n"
    }

    private func track(name: String, kind: String) -> JSON {
        var children: [JSON] = []
        for (i, clip) in plan.clips.enumerated() {
            if clip.transitionIn > 0 {
                let split = TimelinePlan.split(clip.transitionIn)
                children.append(
                    .object([
                        ("OTIO_SCHEMA", .string("Transition.1")),
                        ("metadata", .object([])),
                        ("name", .string("Cross Dissolve")),
                        ("in_offset", time(split.before)),
                        ("out_offset", time(split.after)),
                        ("transition_type", .string("SMPTE_Dissolve"))
                    ]))
            }
            let cut = plan.trimmed(i)
            children.append(
                .object([
                    ("OTIO_SCHEMA", .string("Clip.2")),
                    ("metadata", metadata(clip, index: i)),
                    ("name", .string(document.sourceName)),
                    ("source_range", range(start: cut.sourceIn, duration: cut.sourceOut - cut.sourceIn)),
                    ("effects", .array([])),
                    ("markers", .array([])),
                    ("enabled", .bool(true)),
                    (
                        "media_references",
                        .object([
                            (
                                "DEFAULT_MEDIA",
                                .object([
                                    ("OTIO_SCHEMA", .string("ExternalReference.1")),
                                    ("metadata", .object([])),
                                    ("name", .string(document.sourceName)),
                                    ("available_range", range(start: 0, duration: plan.sourceFrames)),
                                    ("available_image_bounds", .null),
                                    (
                                        "target_url",
                                        .string(
                                            document.sourceURL ?? TextEscaping.fileURL(forName: document.sourceName))
                                    )
                                ])
                            )
                        ])
                    ),
                    ("active_media_reference_key", .string("DEFAULT_MEDIA"))
                ]))
        }
        return .object([
            ("OTIO_SCHEMA", .string("Track.1")),
            ("metadata", .object([])),
            ("name", .string(name)),
            ("source_range", .null),
            ("effects", .array([])),
            ("markers", .array([])),
            ("enabled", .bool(true)),
            ("children", .array(children)),
            ("kind", .string(kind))
        ])
    }

    /// `moments` metadata of a clip: the untrimmed segment in frames, and its reframe.
    private func metadata(_ clip: TimelinePlan.Clip, index: Int) -> JSON {
        var fields: [(String, JSON)] = [
            ("segment", .int(index + 1)),
            ("source_in_frame", .int(clip.sourceIn)),
            ("source_out_frame", .int(clip.sourceOut))
        ]
        if let crop = clip.crop {
            let reframe = Reframe(
                crop: crop, sourceWidth: document.sourceWidth, sourceHeight: document.sourceHeight,
                outputWidth: document.outputWidth, outputHeight: document.outputHeight)
            fields.append(
                (
                    "reframe",
                    .object([
                        (
                            "crop",
                            .object([
                                ("x", .double(crop.x)), ("y", .double(crop.y)),
                                ("width", .double(crop.width)), ("height", .double(crop.height))
                            ])
                        ),
                        ("crop_origin", .string("top-left, normalised to the displayed source picture")),
                        ("source_size", .array([.int(document.sourceWidth), .int(document.sourceHeight)])),
                        ("output_size", .array([.int(document.outputWidth), .int(document.outputHeight)])),
                        ("fit_scale", .double(reframe.scale)),
                        ("offset_pixels", .array([.double(reframe.offsetX), .double(reframe.offsetY)]))
                    ])
                ))
        }
        return .object([("moments", .object(fields))])
    }

    private func time(_ frames: Int) -> JSON {
        .object([
            ("OTIO_SCHEMA", .string("RationalTime.1")),
            ("rate", .double(plan.rate.framesPerSecond)),
            ("value", .double(Double(frames)))
        ])
    }

    private func range(start: Int, duration: Int) -> JSON {
        .object([
            ("OTIO_SCHEMA", .string("TimeRange.1")),
            ("duration", time(duration)),
            ("start_time", time(start))
        ])
    }
}

/// A JSON value with ordered object keys, written pretty-printed.
enum JSON {
    case null
    case bool(Bool)
    case int(Int)
    case double(Double)
    case string(String)
    case array([JSON])
    case object([(String, JSON)])

    func write(to out: inout String, indent: Int) {
        let pad = String(repeating: " ", count: indent + 4)
        switch self {
        case .null: out += "null"
        case .bool(let b): out += b ? "true" : "false"
        case .int(let i): out += String(i)
        case .double(let d): out += d.isFinite ? "\(d)" : "null"
        case .string(let s): out += TextEscaping.jsonString(s)
        case .array(let items):
            if items.isEmpty { out += "[]"; return }
            out += "[\n"
            for (i, item) in items.enumerated() {
                out += pad
                item.write(to: &out, indent: indent + 4)
                out += i < items.count - 1 ? ",\n" : "\n"
            }
            out += String(repeating: " ", count: indent) + "]"
        case .object(let fields):
            if fields.isEmpty { out += "{}"; return }
            out += "{\n"
            for (i, (key, value)) in fields.enumerated() {
                out += pad + TextEscaping.jsonString(key) + ": "
                value.write(to: &out, indent: indent + 4)
                out += i < fields.count - 1 ? ",\n" : "\n"
            }
            out += String(repeating: " ", count: indent) + "}"
        }
    }
}
