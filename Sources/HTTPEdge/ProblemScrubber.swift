import Foundation
import HTTPTypes
import Wording

/// Recognises text that must not reach a client: absolute file paths, `file:` URLs and FFmpeg's
/// messages (they name the server's layout and libraries). The full text goes to the log.
public enum ProblemScrubber {
    /// URL paths of this API (they appear in details on purpose: "see /api/v1/upload/formats").
    public static let apiPrefixes = ["/api/", "/openapi.json", "/health", "/ready"]

    /// Phrases of FFmpeg's error strings (av_strerror) and log lines.
    public static let ffmpegPhrases = [
        "invalid data found when processing input", "moov atom not found", "end of file", "error number",
        "no such file or directory", "operation not permitted", "permission denied", "invalid argument",
        "decoder not found", "demuxer not found", "encoder not found", "muxer not found", "protocol not found",
        "stream not found", "bitstream filter not found", "option not found", "immediate exit requested",
        "resource temporarily unavailable", "cannot allocate memory", "input/output error", "averror", "libav",
        "ffmpeg", "ffprobe", "avformat", "avcodec", "swscale", "swresample"
    ]

    public static func leaks(_ text: String) -> Bool {
        let lower = text.lowercased()
        // file:/… and file://… URLs ("the video file: its content …" is prose).
        if lower.range(of: #"file:/"#) != nil { return true }
        if ffmpegPhrases.contains(where: lower.contains) { return true }
        // "[mov,mp4,m4a @ 0x55d0c1a0]": an FFmpeg log line's context.
        if lower.range(of: #"@ 0x[0-9a-f]+"#, options: .regularExpression) != nil { return true }
        return containsAbsolutePath(text)
    }

    /// A "/word/…" that starts a token and is not one of the API's own paths.
    public static func containsAbsolutePath(_ text: String) -> Bool {
        var index = text.startIndex
        while let slash = text[index...].firstIndex(of: "/") {
            let startsToken = slash == text.startIndex || " \t\n\"'(=[:,<".contains(text[text.index(before: slash)])
            let rest = text[slash...]
            let next = rest.dropFirst().first
            if startsToken, let next, next.isLetter || next.isNumber || next == "." || next == "_" || next == "~",
                !apiPrefixes.contains(where: { rest.hasPrefix($0) })
            {
                // A single segment with no further slash ("/s", "1/2") is not a path.
                let token = rest.prefix { !" \t\n\"')],;<".contains($0) }
                if token.dropFirst().contains("/") || token.contains(".") { return true }
            }
            index = text.index(after: slash)
        }
        return false
    }

    /// The text without its parenthesised asides that leak ("The file is not a video (…ffmpeg…).").
    public static func withoutLeakingAsides(_ text: String) -> String {
        var result = ""
        var rest = Substring(text)
        while let open = rest.firstIndex(of: "("), let close = rest[open...].firstIndex(of: ")") {
            let aside = rest[open...close]
            if leaks(String(aside)) {
                var before = rest[..<open]
                while before.last == " " { before = before.dropLast() }
                result += before
            } else {
                result += rest[...close]
            }
            rest = rest[rest.index(after: close)...]
        }
        return result + rest
    }

    /// What a client is told instead.
    public static func generic(_ status: HTTPResponse.Status) -> String {
        status.code >= 500
            ? Say.internalError
            : Say.requestNotProcessed
    }
}
