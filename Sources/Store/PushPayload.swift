import Foundation
import Wording

/// The APNs body of a job's end: `{"aps": {"alert": {"title", "body"}, "sound": "default"}, "job_id", "status"}`,
/// in the words the app's user reads on the lock screen. Always well under APNs' 4 KB limit: the
/// parts that come from the user (the file name, the failure sentence) are cut short.
public struct PushPayload: Codable, Sendable, Equatable {
    public struct Alert: Codable, Sendable, Equatable {
        public var title: String
        public var body: String
    }

    public struct APS: Codable, Sendable, Equatable {
        public var alert: Alert
        public var sound: String
    }

    public var aps: APS
    public var jobId: String
    public var status: JobState

    enum CodingKeys: String, CodingKey { case aps, jobId = "job_id", status }

    /// APNs refuses larger bodies (413 PayloadTooLarge).
    public static let maxBytes = 4096
    static let maxNameCharacters = 60
    static let maxBodyCharacters = 180

    /// The push for a job that just completed or failed; nil for any other state.
    public init?(job: Job) {
        let title: String, body: String
        switch job.status {
        case .completed:
            title = Say.highlightReady
            if let name = job.edit?.sourceName.map(Self.cleaned), !name.isEmpty {
                body = Say.pushReady(name: Self.shortened(name, to: Self.maxNameCharacters))
            } else if let seconds = job.output.map({ Int($0.duration.rounded()) }), seconds > 0 {
                body = Say.pushReady(seconds: seconds)
            } else {
                body = Say.pushReady
            }
        case .failed:
            title = Say.pushFailedTitle
            let reason = Self.cleaned(job.errorMessage ?? job.message)
            body = reason.isEmpty ? Say.pushFailedWithoutReason : Self.shortened(reason, to: Self.maxBodyCharacters)
        case .pending, .processing, .cancelled:
            return nil
        }
        aps = APS(alert: Alert(title: title, body: body), sound: "default")
        jobId = job.id
        status = job.status
    }

    static let encoder: JSONEncoder = {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return encoder
    }()

    /// Compact JSON, sorted keys.
    public func json() throws -> String { String(decoding: try Self.encoder.encode(self), as: UTF8.self) }

    /// Control characters (newlines included) become spaces; surrounding spaces go.
    static func cleaned(_ text: String) -> String {
        String(
            String.UnicodeScalarView(text.unicodeScalars.map { CharacterSet.controlCharacters.contains($0) ? " " : $0 })
        )
        .trimmingCharacters(in: .whitespaces)
    }

    /// At most `limit` characters, an ellipsis marking a cut.
    static func shortened(_ text: String, to limit: Int) -> String {
        text.count <= limit ? text : String(text.prefix(limit - 1)) + "\u{2026}"
    }
}
