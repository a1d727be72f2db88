@testable import HTTPEdge
@testable import MomentsServer
import Testing

/// The last line of defence in `Problem.response`: what it withholds and what it lets through.
@Suite("Problem scrubber")
struct ProblemScrubberTests {
    @Test func withholdsPathsURLsAndFFmpegText() {
        for leaking in [
            "The file is not a video (Invalid data found when processing input).",
            "Cannot open /var/lib/moments/Storage/uploads/x.partial.",
            "Missing certificate Config/x at file:///etc/moments/AppleRootCA-G3.cer",
            "[mov,mp4,m4a,3gp,3g2,mj2 @ 0x55d0c1a0] moov atom not found",
            "the Apple root certificate /tmp/moments/apple-root.cer is missing"
        ] {
            #expect(ProblemScrubber.leaks(leaking), "\(leaking)")
        }
        for fine in [
            "The uploaded file is not a video this server can read. (not a video file: its content matches no container this server reads) Upload an MP4, MOV or another format listed at /api/v1/upload/formats.",
            "There is no endpoint GET at this path (the `instance` member). The API is described at /openapi.json.",
            "Send the video as multipart/form-data with a part named \"file\" (curl -F file=@video.mp4).",
            "target_duration must be between 5 and 180 seconds; it was 1/2.",
            "Send it as \"Authorization: Bearer <api_key>\"."
        ] {
            #expect(!ProblemScrubber.leaks(fine), "\(fine)")
        }
    }

    /// A leaking aside is cut out and the sentence around it kept.
    @Test func keepsTheAdviceAroundALeakingAside() {
        let detail =
            "The uploaded file is not a video this server can read. (Invalid data found when processing input) Upload an MP4, MOV or another format listed at /api/v1/upload/formats."
        let cleaned = ProblemScrubber.withoutLeakingAsides(detail)
        #expect(
            cleaned
                == "The uploaded file is not a video this server can read. Upload an MP4, MOV or another format listed at /api/v1/upload/formats."
        )
        #expect(!ProblemScrubber.leaks(cleaned))
    }
}
