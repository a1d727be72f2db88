import MediaVocabulary

/// The video itself: why an upload is refused, why a job failed.
extension Say {
    /// Where a client finds what the server reads.
    static let formatsHint = " Upload an MP4, MOV or another format listed at /api/v1/upload/formats."

    public static let unreadableUpload =
        "The uploaded file could not be read: it is damaged or not a video this server can read." + formatsHint

    /// The upload's probe found the file unusable (`detail`: the limit it broke, in the user's terms).
    public static func unusableUpload(_ kind: MediaFailure, detail: String) -> String {
        let what: String
        switch kind {
        case .emptyFile: what = "The uploaded file is empty."
        case .notMedia: what = "The uploaded file is not a video this server can read."
        case .notVideo: what = "The uploaded file has no video: it is a still image or audio only."
        case .unsupportedCodec: what = "The video's codec is not supported."
        case .dimensionsTooLarge:
            what = "The video's picture is larger than this server accepts (8192 px a side, 36 megapixels)."
        case .truncated:
            what = "The video file is incomplete (it ends early, e.g. the upload was cut short or the recording was not "
                + "finished)."
        case .unsupportedContainer:
            what = "The uploaded file is a playlist, manifest, list of other files or a container this server does not open."
        case .tooLong, .tooManyFrames, .badTimestamps: what = "The video cannot be accepted: \(detail)."
        case .fileNotFound, .io, .ffmpeg, .cancelled, .invalidRange, .unusable: what = "The video cannot be read."
        }
        return what + formatsHint
    }

    public static func tooShort(duration: Double) -> String {
        String(format: "The video is %.2f s long; a highlight needs at least 1 second of video.", duration)
    }

    // MARK: A failed job

    public static let noUsableFootage =
        "No usable footage: the video is black, frozen or blurred throughout, or too short for a highlight."

    /// A job whose media failed (`detail`: the media error's own clause, which names no path).
    public static func jobFailed(_ kind: MediaFailure, detail: String) -> String {
        switch kind {
        case .unusable:
            return noUsableFootage
        case .truncated, .notMedia, .notVideo, .unsupportedCodec, .dimensionsTooLarge, .unsupportedContainer:
            return "The video could not be processed: \(detail). Try exporting it again as MP4 and upload it."
        case .tooLong, .tooManyFrames, .badTimestamps:
            return "The video could not be processed: \(detail). Check that it plays correctly, trim or export it again, and upload it."
        case .invalidRange, .fileNotFound, .emptyFile, .io, .cancelled, .ffmpeg:
            return unprocessable
        }
    }

    public static let unprocessable =
        "The video could not be processed. Check that it plays correctly, export it again as MP4 and upload it."
    public static let recutFailure =
        "The re-cut could not be made; you were not charged for it. Try other settings, or upload the video again."
    public static let serviceFailure =
        "The server could not finish this highlight; you were not charged for it. Please upload the video again later."
    public static let timeLimit =
        "The video could not be processed: it took longer than this server allows for a video of its length. Check that the file plays correctly, export it again as MP4 and upload it."

    public static func interruptedTooOften(attempts: Int) -> String {
        "Processing was interrupted \(attempts) times (the server stopped while working on it); giving up. Please upload the video again."
    }
}
