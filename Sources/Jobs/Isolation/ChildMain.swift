import Foundation
#if canImport(Glibc)
import Glibc
#endif
import Highlight
import MediaEngine

/// The child side of `moments job-exec`: reads one ChildTask from standard input, runs it, and
/// writes JSON lines to standard output. The parent applied the resource limits before exec; this
/// process only ever sees the one file the task names (and the outputs it writes).
public enum ChildMain {
    public static func run() -> Int32 {
        adoptProcessNiceness()
        let token = CancellationToken()
        signal(SIGTERM, SIG_IGN)
        let source = DispatchSource.makeSignalSource(signal: SIGTERM, queue: .global())
        source.setEventHandler { token.cancel() }
        source.resume()

        guard let data = try? FileHandle.standardInput.readToEnd(), data.count < 1 << 20,
              let task = try? JSONDecoder().decode(ChildTask.self, from: data) else {
            FileHandle.standardError.write(Data("moments job-exec: expected one task as JSON on standard input\n".utf8))
            return ChildExit.badTask
        }
        do throws(MediaError) {
            switch task.kind {
            case .probe:
                emit(ChildMessage(probe: try Probe.probe(task.source)))
            case .highlight:
                guard let spec = task.highlight else { return ChildExit.badTask }
                var last = (stage: "", percent: -1)
                let result = try HighlightEngine.make(spec.request, cancellation: token) { stage, fraction in
                    let percent = Int(fraction * 100)
                    guard stage != last.stage || percent != last.percent else { return }
                    last = (stage, percent)
                    emit(ChildMessage(progress: .init(stage: stage, fraction: fraction)))
                }
                emit(ChildMessage(result: .init(report: result.report, render: result.render, cached: result.cached, fingerprint: result.fingerprint)))
            case .recognize:
                guard let spec = task.recognize, let data = FileManager.default.contents(atPath: spec.candidates),
                      let candidates = try? JSONDecoder().decode([ReuploadCandidate].self, from: data) else { return ChildExit.badTask }
                emit(ChildMessage(progress: .init(stage: "recognising", fraction: 0)))
                let recognition = try ReuploadRecognizer.recognize(task.source, candidates: candidates, analysis: spec.analysis, cancellation: token)
                emit(ChildMessage(recognition: recognition))
            }
            return 0
        } catch {
            if error.kind == .cancelled { return ChildExit.cancelled }
            emit(ChildMessage(failure: ChildFailure(error)))
            return ChildExit.mediaError
        }
    }

    /// The parent lowered this process's priority before exec (`jobs.niceness`), which on Linux is a
    /// property of the main thread only. Swift's async `main` parks that thread and runs the command
    /// on a dispatch worker, which libdispatch gives its queue's priority (nice 0): without this the
    /// media work, and every FFmpeg thread it starts, would compete with the API on equal terms.
    static func adoptProcessNiceness() {
        #if os(Linux)
        errno = 0
        let main = getpriority(__priority_which_t(PRIO_PROCESS.rawValue), id_t(getpid()))
        guard errno == 0, main > getpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0) else { return }
        _ = setpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0, main)
        #endif
    }

    private static let encoder = JSONEncoder()

    private static func emit(_ message: ChildMessage) {
        guard var line = try? encoder.encode(message) else { return }
        line.append(0x0A)
        line.withUnsafeBytes { raw in
            var offset = 0
            while offset < raw.count {
                let n = write(1, raw.baseAddress! + offset, raw.count - offset)
                if n < 0 { if errno == EINTR { continue }; return }
                offset += n
            }
        }
    }
}
