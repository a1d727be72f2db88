import FFmpeg
import Foundation
import Highlight
import MediaEngine
import Isolation

/// The job child, `moments job-exec`: reads one ChildTask from standard input, runs it on the
/// engine, and writes JSON lines (`ChildMessage`) to standard output. The parent applied the
/// resource limits before exec (`IsolatedChild`); this process only ever sees the one file the
/// task names (and the outputs it writes).
public enum MediaChildMain {
    public static func run() -> Int32 {
        ChildSide.prepare()
        let token = CancellationToken()
        signal(SIGTERM, SIG_IGN)
        let source = DispatchSource.makeSignalSource(signal: SIGTERM, queue: .global())
        source.setEventHandler { token.cancel() }
        source.resume()

        var input = ChildSide.TaskReader(fd: 0)
        guard let line = input.nextLine(), let task = try? JSONDecoder().decode(ChildTask.self, from: line) else {
            FileHandle.standardError.write(
                Data("moments job-exec: expected one task as a JSON line on standard input\n".utf8))
            return ChildExit.badTask
        }
        do throws(MediaError) {
            switch task.kind {
            case .probe:
                emit(ChildMessage(probe: try Probe.probe(task.source)))
            case .highlight:
                guard let request = task.highlight else { return ChildExit.badTask }
                try highlight(request, token: token)
            case .preview:
                guard let output = task.previewOutput else { return ChildExit.badTask }
                emit(ChildMessage(progress: .init(stage: "preview", fraction: 0)))
                emit(ChildMessage(preview: try preview(of: task.source, to: output, token: token)))
            case .recognize:
                guard let spec = task.recognize, let data = FileManager.default.contents(atPath: spec.candidates),
                    let candidates = try? JSONDecoder().decode([ReuploadCandidate].self, from: data)
                else { return ChildExit.badTask }
                emit(ChildMessage(progress: .init(stage: "recognising", fraction: 0)))
                let recognition = try ReuploadRecognizer.recognize(
                    task.source, candidates: candidates, analysis: spec.analysis, cancellation: token)
                emit(ChildMessage(recognition: recognition))
                guard task.continues == true else { break }
                // The highlight the parent prepared from the answer; the end of the input: nothing more.
                guard let next = input.nextLine() else { return 0 }
                guard let followUp = try? JSONDecoder().decode(ChildTask.self, from: next), followUp.kind == .highlight,
                    followUp.source == task.source, let request = followUp.highlight
                else { return ChildExit.badTask }
                try highlight(request, token: token)
            }
            return 0
        } catch {
            if error.kind == .cancelled { return ChildExit.cancelled }
            emit(ChildMessage(failure: ChildFailure(error)))
            return ChildExit.mediaError
        }
    }

    private static func highlight(_ request: HighlightRequest, token: CancellationToken) throws(MediaError) {
        var last = (stage: "", percent: -1)
        let result = try HighlightEngine.make(request, cancellation: token) { stage, fraction in
            let percent = Int(fraction * 100)
            guard stage != last.stage || percent != last.percent else { return }
            last = (stage, percent)
            emit(ChildMessage(progress: .init(stage: stage, fraction: fraction)))
        }
        emit(
            ChildMessage(
                result: .init(
                    report: result.report, render: result.render, cached: result.cached, fingerprint: result.fingerprint
                )))
    }

    /// The whole highlight again, as H.264 at most 540p (HDR tone-mapped to SDR).
    private static func preview(of highlight: String, to output: String, token: CancellationToken) throws(MediaError)
        -> RenderResult
    {
        let info = try Probe.probe(highlight)
        var request = RenderRequest(
            source: highlight, segments: [TimeRange(start: 0, end: info.duration)], output: output)
        request.quality = .preview
        request.maxFrameRate = 30
        return try Renderer.render(request, cancellation: token)
    }

    private static func emit(_ message: ChildMessage) { ChildSide.emit(message) }
}
