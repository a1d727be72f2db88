import Foundation

/// Uploads: the multipart form, tus and the IETF draft's resumable uploads.
extension Say {
    public static let notMultipart = "Send the video as multipart/form-data with a part named \"file\" (curl -F file=@video.mp4)."
    public static let noBoundary = "The multipart/form-data Content-Type has no boundary."
    public static func malformedMultipart(_ reason: String) -> String { "The multipart/form-data body is malformed (\(reason))." }
    public static func formTooLarge(kibibytes: Int) -> String {
        "The form carries more than \(kibibytes) KiB besides the file (part headers, fields). Send the video as the \"file\" part and at most the fields target_duration, quality, aspect, focus, include and exclude."
    }
    public static let formEndedEarly = "The multipart/form-data body ended before its closing boundary (was the upload cut short?)."
    public static let missingFilePart = "The upload has no part named \"file\". Send the video as: curl -F file=@video.mp4 …"
    public static let emptyFilePart = "The \"file\" part is empty. Choose a video file and upload it again."
    public static let uploadInterrupted = "The upload ended before the whole body arrived. Send it again."
    public static let partWithoutName = "A part has no Content-Disposition name."
    public static let twoFileParts = "The upload has more than one \"file\" part; send one video per upload."
    public static func fieldTwice(_ name: String) -> String { "The field \"\(name)\" appears twice." }
    public static func unknownUploadField(_ name: String) -> String {
        "Unknown field \"\(name)\". The upload accepts: file, target_duration, quality, aspect, focus, include, exclude."
    }
    public static func fieldTooLong(_ name: String) -> String { "The field \"\(name)\" is too long." }
    public static let emptyUpload = "The upload is empty. Choose a video file and upload it again."
    public static let lengthOrDefer = "Send either Upload-Length or Upload-Defer-Length: 1, not both."
    public static let tusNeedsLength = "A tus upload needs Upload-Length (or Upload-Defer-Length: 1)."
    public static let invalidMetadata = "Upload-Metadata must be comma-separated \"key base64value\" pairs with unique keys."
    public static func lengthDiffersFromBody(declared: Int64, contentLength: Int64) -> String {
        "Upload-Length (\(declared)) differs from the body's Content-Length (\(contentLength)) of a complete upload."
    }
    public static func uploadReceived(bytes: Int64, seconds: Double, estimate: Int) -> String {
        "Upload received (\(megabytes(bytes)), \(Int(seconds.rounded())) s of video). Your highlight should be ready in about \(estimate) s."
    }

    /// "12.3 MB", or "812 bytes" under a megabyte.
    public static func megabytes(_ bytes: Int64) -> String {
        bytes >= 1_000_000 ? String(format: "%.1f MB", Double(bytes) / 1_000_000) : "\(bytes) bytes"
    }
    public static func tusVersion(_ version: String) -> String { "This server speaks tus \(version); send Tus-Resumable: \(version)." }
    public static func notAByteCount(_ header: String) -> String { "\(header) must be a non-negative whole number of bytes." }
    public static let uploadNotFound = "There is no such upload for this API key. Create one with POST /api/v1/uploads."
    public static let appendNeedsOffset = "An append needs Upload-Offset: the offset the upload is at (ask with HEAD)."
    public static let tusAppendContentType = "A tus append sends Content-Type: application/offset+octet-stream."
    public static let appendNeedsComplete = "An append needs Upload-Complete: ?1 on the last part, ?0 before it."
    public static let invalidChecksum = "Upload-Checksum must be \"<algorithm> <base64 digest>\", e.g. \"sha1 Kq5sNclPz7QV2+lfQIuc6R7oRu0=\"."
    public static func unsupportedChecksum(_ given: String, allowed: String) -> String {
        "The checksum algorithm \"\(given)\" is not supported; use one of \(allowed)."
    }
    public static let uploadGone = "This upload was cancelled or has expired; its bytes are deleted. Start a new upload."
    public static func uploadComplete(jobID: String) -> String { "This upload is complete; its job is \(jobID)." }
    public static let uploadRefused = "This upload was refused. Start a new upload."
    public static let uploadLocked =
        "Another request is still sending bytes to this upload. Wait for it to end (or drop it), "
        + "then ask for the offset (HEAD) and continue."
    public static func offsetMismatch(offset: Int64, sent: Int64) -> String {
        "The upload is at byte \(offset), not \(sent). Ask for the offset (HEAD) and send from there."
    }
    public static func lengthChanged(length: Int64, to: Int64) -> String {
        "The upload's length is \(length) bytes; it cannot change to \(to)."
    }
    public static func lengthBelowReceived(declared: Int64, received: Int64) -> String {
        "The declared length (\(declared) bytes) is less than the bytes already received (\(received))."
    }
    public static func lengthEndedElsewhere(declared: Int64, ended: Int64) -> String {
        "The upload was declared as \(declared) bytes but ended at \(ended)."
    }
    public static func pastLength(limit: Int64) -> String {
        "The bytes sent go past the upload's declared length (\(limit) bytes)."
    }
    public static let appendInterrupted =
        "The append ended before its bytes arrived, so its checksum cannot be verified; nothing of it "
        + "was kept. Ask for the offset (HEAD) and send again."
    public static func checksumMismatch(offset: Int64) -> String {
        "The bytes received do not match the Upload-Checksum sent with them; they were discarded. "
            + "Send them again from offset \(offset)."
    }
    public static let uploadNotTurnedIntoJob = "The upload could not be turned into a job. Try again later."
}
