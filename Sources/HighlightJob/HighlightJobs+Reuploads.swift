import Analysis
import FFmpeg
import Foundation
import Highlight
import MediaEngine
import JobMedia
import Logging
import Store
import Telemetry

/// Re-uploads recognised: before a job's analysis, its input is compared with the
/// account's earlier uploads whose media are still stored. Never another account's: the
/// candidates come from the job's own account only, and the analysis cache is per account.
extension HighlightJobs {
    /// Earlier uploads a new one is compared with (the account's newest completed jobs).
    static let reuploadCandidateLimit = 20
    /// Files the worker writes in the job's folder for its child (removed after the run).
    static let candidatesFileName = "reupload-candidates.json"
    static let reusedAnalysisFileName = "reused-analysis.json"
    static let reusedHighlightFileName = "reused-highlight.mp4"
    static let reusedPosterFileName = "reused-poster.jpg"
    /// A fingerprint's JSON is about 90 KB for 10 minutes of fully decoded video (the plan's length
    /// cap keeps real ones far below this): a larger one is not stored or read, so a child that
    /// misbehaved cannot make every later job of its account load megabytes.
    static let maxFingerprintBytes = 4 << 20

    /// The account's earlier uploads this job's input may be a copy of, with the earlier highlight's
    /// segments where the job asks for the same highlight. None for a re-cut (its input is known).
    func reuploadCandidates(for job: Job, log: Logger) async -> [ReuploadCandidate] {
        guard job.edit?.recutOf == nil else { return [] }
        let rows: [(job: Job, fingerprint: StoredFingerprint)]
        do {
            rows = try await database.reuploadCandidates(
                accountId: job.accountId, excludingJob: job.id, limit: Self.reuploadCandidateLimit)
        } catch {
            log.warning("cannot look up earlier uploads; analysing in full", metadata: ["error": "\(error)"])
            return []
        }
        let decoder = JSONDecoder()
        let families = Self.families(rows.map { ($0.job.id, $0.job.output?.duplicateOf?.jobId) })
        return rows.compactMap { earlier, stored in
            guard earlier.accountId == job.accountId, stored.fingerprint.utf8.count <= Self.maxFingerprintBytes,
                let fingerprint = try? decoder.decode(ContentFingerprint.self, from: Data(stored.fingerprint.utf8))
            else { return nil }
            let copy =
                Self.asksForSameHighlight(job, as: earlier)
                ? earlier.segments?.map {
                    var segment = $0
                    segment.crop = nil  // the new render's windows are its own
                    return segment
                } : nil
            return ReuploadCandidate(
                jobId: earlier.id, fingerprint: fingerprint, copySegments: copy, family: families[earlier.id])
        }
    }

    /// Each job's family: the earliest upload its chain of `duplicate_of` (job, earlier job) leads
    /// to, followed as far as these jobs go (a job recognised as none is its own family).
    static func families(_ jobs: [(id: String, duplicateOf: String?)]) -> [String: String] {
        var earlierOf: [String: String] = [:]
        for job in jobs { if let earlier = job.duplicateOf { earlierOf[job.id] = earlier } }
        var family: [String: String] = [:]
        for job in jobs {
            var id = job.id, steps = 0
            while let earlier = earlierOf[id], steps <= jobs.count {
                id = earlier
                steps += 1
            }
            family[job.id] = id
        }
        return family
    }

    /// The new job would get the earlier one's highlight: same length, quality, output cap and
    /// shape, no pinned or excluded moments on either, and the earlier one delivered a highlight.
    static func asksForSameHighlight(_ job: Job, as earlier: Job) -> Bool {
        guard earlier.status == .completed, earlier.mediaDeletedAt == nil, earlier.output != nil,
            !(earlier.segments ?? []).isEmpty
        else { return false }
        let a = job.edit ?? JobEdit(), b = earlier.edit ?? JobEdit()
        return job.targetDuration == earlier.targetDuration && job.quality == earlier.quality
            && job.outputCap == earlier.outputCap
            && a.aspect == b.aspect && (a.focus ?? .auto) == (b.focus ?? .auto) && a.include.isEmpty && a.exclude.isEmpty && b.include.isEmpty && b.exclude.isEmpty
    }

    /// The recognition task for the job's child, its candidates written to the job's folder; nil
    /// when they cannot be written (then the video is analysed in full). The same child goes on to
    /// the highlight (`continues`): `afterRecognition` prepares that task from its answer.
    func recognitionTask(
        candidates: [ReuploadCandidate], workspace: JobWorkspace, request: HighlightRequest, log: Logger
    ) -> ChildTask? {
        let candidatesPath = workspace.directory + "/" + Self.candidatesFileName
        do {
            try JSONEncoder().encode(candidates).write(to: URL(fileURLWithPath: candidatesPath), options: .atomic)
        } catch {
            log.warning("cannot write the re-upload candidates; analysing in full", metadata: ["error": "\(error)"])
            return nil
        }
        return ChildTask.recognize(
            workspace.inputPath, candidates: candidatesPath, analysis: request.analysis, continues: true)
    }

    /// The highlight request after the recognition's answer: on a match, the earlier analysis is
    /// fetched into the job's folder and reused; when the look was undecided, the analysis judges
    /// the candidates itself. Any failure here only means the video is analysed in full.
    func afterRecognition(
        _ recognition: Recognition, job: Job, candidates: [ReuploadCandidate], workspace: JobWorkspace,
        request: HighlightRequest, stages: JobStageTimer, log: Logger
    ) async -> (HighlightRequest, RecognizedReupload?) {
        var request = request
        if recognition.deferred {
            log.info("re-upload look undecided; the analysis judges", metadata: Self.look(recognition, candidates))
            request.reuploadCandidates = workspace.directory + "/" + Self.candidatesFileName
            return (request, nil)
        }
        guard let match = recognition.match, let target = recognition.target,
            let candidate = candidates.first(where: { $0.jobId == match.jobId })
        else {
            log.info("not a re-upload", metadata: Self.look(recognition, candidates))
            return (request, nil)
        }
        stages.step("fetch earlier analysis")
        let analysisPath = workspace.directory + "/" + Self.reusedAnalysisFileName
        do {
            try await mediaStorage.fetch(jobID: match.jobId, file: .analysisData, to: analysisPath)
            Self.openToTheChild(analysisPath)
        } catch {
            log.info(
                "re-upload recognised but its analysis is gone; analysing in full", metadata: ["of": "\(match.jobId)"])
            return (request, nil)
        }
        let recognized = RecognizedReupload(
            fingerprint: recognition.fingerprint, earlierJobId: match.jobId,
            sameTimeline: Self.sameTimeline(
                match: match, target: target, earlierDuration: candidate.fingerprint.duration))
        var earlierResult: String?, earlierPoster: String?, sameTimeline = false
        if let copy = candidate.copySegments {
            if ReuploadRecognizer.copiedSegments(copy, offset: match.offset, duration: target.duration) == nil {
                // The same highlight asked for, but some of its footage is not in the new video (trimmed
                // off): the earlier highlight's file lets the render copy the segments both share, and
                // its poster stands for the new one when the best frame is the same.
                stages.step("fetch earlier highlight")
                let path = workspace.directory + "/" + Self.reusedHighlightFileName
                do {
                    try await mediaStorage.fetch(jobID: match.jobId, file: .result, to: path)
                    Self.openToTheChild(path)
                    earlierResult = path
                    let poster = workspace.directory + "/" + Self.reusedPosterFileName
                    if (try? await mediaStorage.fetch(jobID: match.jobId, file: .poster, to: poster)) != nil {
                        Self.openToTheChild(poster)
                        earlierPoster = poster
                    }
                } catch {
                    log.info(
                        "the earlier highlight is gone; its segments are encoded again",
                        metadata: ["of": "\(match.jobId)"])
                }
            } else {
                // The earlier highlight is returned; if the video also starts and ends where the earlier
                // one did, its storyboard (filmstrip, curves, cuts, moments) is this one's.
                sameTimeline = Self.sameTimeline(
                    match: match, target: target, earlierDuration: candidate.fingerprint.duration)
            }
        }
        request.reuse = AnalysisReuse(
            analysisPath: analysisPath, match: match, target: target, copySegments: candidate.copySegments,
            earlierResult: earlierResult, earlierPoster: earlierPoster, sameTimeline: sameTimeline)
        log.info(
            "re-upload recognised",
            metadata: [
                "of": "\(match.jobId)", "offset": "\(String(format: "%.3f", match.offset))",
                "refined": "\(match.refined)", "frames": "\(recognition.framesDecoded)",
                "keyframe_passes": "\(recognition.keyframePasses ?? 0)",
                "verification_frames": "\(recognition.verificationFrames)",
                "first_look": "\(recognition.firstLook ?? "matched")"
            ])
        return (request, recognized)
    }

    /// A file fetched into the job's folder while its child runs (the folder was handed to the
    /// child's user when it started; this file is this process's, 0600 when it was taken back from
    /// an earlier child, or linked to such a file): readable by the child. No other user reaches
    /// it: the job folders are closed (0700) and the child sees only its own.
    static func openToTheChild(_ path: String) {
        chmod(path, 0o644)
    }

    /// What the look cost, for the log of a video that was not (or not yet) recognised.
    static func look(_ recognition: Recognition, _ candidates: [ReuploadCandidate]) -> Logger.Metadata {
        [
            "candidates": "\(candidates.count)", "frames": "\(recognition.framesDecoded)",
            "keyframe_passes": "\(recognition.keyframePasses ?? 0)",
            "verification_frames": "\(recognition.verificationFrames)"
        ]
    }

    /// The new video shows the earlier one's footage from the same start to the same end, to a frame.
    static func sameTimeline(match: ReuploadMatch, target: ReuseTarget, earlierDuration: Double) -> Bool {
        let frame = 1 / max(1, target.frameRate > 0 ? target.frameRate : 30)
        return abs(match.offset) <= frame && abs(target.duration - earlierDuration) <= frame
    }

    /// Removes the worker's own files from the job's folder.
    static func removeRecognitionFiles(_ workspace: JobWorkspace) {
        for name in [candidatesFileName, reusedAnalysisFileName, reusedHighlightFileName, reusedPosterFileName] {
            try? FileManager.default.removeItem(atPath: workspace.directory + "/" + name)
        }
    }

    /// Stores the fingerprint of a completed job's input, for recognising its re-uploads: the
    /// analysis's, or for a recognised re-upload whose analysis was reused, its keyframe look's
    /// (best effort: without it, a re-upload is analysed again).
    public func storeFingerprint(of made: MadeHighlight, recognized: RecognizedReupload?, job: Job, log: Logger) async {
        let result = made.result
        await storeFingerprint(
            result.fingerprint ?? (result.report.analysisReused == true ? recognized?.fingerprint : nil), job: job,
            log: log)
    }

    func storeFingerprint(_ fingerprint: ContentFingerprint?, job: Job, log: Logger) async {
        guard let fingerprint, job.edit?.recutOf == nil,
            let data = try? JSONEncoder().encode(fingerprint), data.count <= Self.maxFingerprintBytes,
            let text = String(data: data, encoding: .utf8)
        else { return }
        do {
            try await database.saveFingerprint(
                StoredFingerprint(
                    jobId: job.id, accountId: job.accountId, duration: fingerprint.duration,
                    fingerprint: text, createdAt: clock()))
        } catch {
            log.warning("cannot store the input's fingerprint", metadata: ["error": "\(error)"])
        }
    }
}

/// What the worker keeps of a recognised re-upload for finishing the job.
public struct RecognizedReupload: Sendable {
    /// The new video's keyframe fingerprint (stored for its own re-uploads: it is not analysed).
    var fingerprint: ContentFingerprint?
    /// The earlier job it is a copy of.
    public var earlierJobId: String = ""
    /// It starts and ends where the earlier video does (to a frame): the same video, whose
    /// kept input can serve both jobs (`settleKeptInputs`).
    public var sameTimeline = false
}
