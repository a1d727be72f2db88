import FFmpeg
import CIsolation
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
        ProcessMemory.mapLargeAllocations()
        adoptProcessNiceness()
        enterSandbox()
        let token = CancellationToken()
        signal(SIGTERM, SIG_IGN)
        let source = DispatchSource.makeSignalSource(signal: SIGTERM, queue: .global())
        source.setEventHandler { token.cancel() }
        source.resume()

        var input = TaskReader(fd: 0)
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

    /// Installs the system-call filter (`moments_enter_sandbox`): before the task is read and any
    /// media is opened, so nothing FFmpeg parses runs without it. Where the filter cannot be
    /// installed the child goes on (its user, limits, cgroup and Landlock still hold) and says so.
    static func enterSandbox() {
        let rc = moments_enter_sandbox()
        if rc != 0 {
            FileHandle.standardError.write(
                Data(
                    "moments job-exec: warning: no system-call filter (\(String(cString: strerror(-rc)))): running without it\n"
                        .utf8))
        }
    }

    /// Reads the task lines from standard input (split by the parent's `LineReader`): each up to a
    /// newline or the end of the input, at most 1 MB.
    struct TaskReader {
        let fd: Int32
        private var lines = LineReader(maxLine: TaskReader.maxLine)
        private var pending: [Data] = []
        private var next = 0
        private var chunk = [UInt8](repeating: 0, count: 64 * 1024)
        private var ended = false
        static let maxLine = 1 << 20

        init(fd: Int32) { self.fd = fd }

        /// The next non-empty line; nil at the end of the input, on a read error or an overlong line.
        mutating func nextLine() -> Data? {
            while true {
                if next < pending.count {
                    let line = pending[next]
                    next += 1
                    if line.isEmpty { continue }
                    return line.count <= Self.maxLine ? line : nil
                }
                if ended {
                    // A last line without a newline.
                    defer { lines.buffer.removeAll() }
                    return lines.buffer.isEmpty || lines.buffer.count > Self.maxLine ? nil : lines.buffer
                }
                let n = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
                if n < 0 && errno == EINTR { continue }
                if n <= 0 { ended = true; continue }
                pending = lines.feed(chunk[0..<n])
                next = 0
                if lines.overflowed || lines.buffer.count > Self.maxLine { return nil }
            }
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
