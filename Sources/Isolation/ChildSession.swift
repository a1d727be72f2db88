import Foundation
import Logging
import NIOCore

/// The parent's side of one running `moments job-exec` child, for the time of
/// `IsolatedChild.withChild`: the messages it writes, in order, and its input, to which a second
/// task may be sent (a recognition that `continues`). Used from the task that started the child.
public final class ChildSession<Reply: ChildReply> {
    public let pid: pid_t
    /// The last answer and the last failure read so far.
    public private(set) var answer: Reply?
    public private(set) var failure: Reply?
    /// Whether the child's input is still open (a task may still be sent).
    public private(set) var isInputOpen = true

    private var lines: NIOAsyncChannelInboundStream<Data>.AsyncIterator
    private let input: Channel
    private let watch: ChildWatch
    private let onProgress: (String, Double) -> Void
    private let decoder = JSONDecoder()
    private let logger: Logger

    init(
        pid: pid_t, lines: NIOAsyncChannelInboundStream<Data>, input: Channel, watch: ChildWatch, logger: Logger,
        onProgress: @escaping (String, Double) -> Void
    ) {
        self.pid = pid; self.lines = lines.makeAsyncIterator(); self.input = input; self.watch = watch
        self.logger = logger; self.onProgress = onProgress
    }

    /// The child's messages, up to the end of its output (or a misbehaviour that ended reading it).
    public var messages: Messages { Messages(session: self) }

    /// The next message; nil once the output has ended. Progress is also reported to `onProgress`;
    /// an unreadable line is logged and skipped.
    public func next() async -> Reply? {
        while true {
            let line: Data?
            do { line = try await lines.next() } catch { line = nil }
            guard let line else { return nil }
            guard let message = try? decoder.decode(Reply.self, from: line) else {
                logger.warning("child wrote an unreadable line", metadata: ["bytes": "\(line.count)"])
                continue
            }
            if let p = message.progressReport { onProgress(p.stage, p.fraction) }
            if message.isAnswer { answer = message }
            if message.isFailure { failure = message }
            return message
        }
    }

    /// Writes `task` as one JSON line to the child's input.
    public func send(_ task: some Encodable) async throws {
        guard isInputOpen else { throw ChildInputClosed() }
        var line = try JSONEncoder().encode(task)
        line.append(0x0A)
        try await sendLine(line)
    }

    func sendLine(_ line: Data) async throws {
        try await input.writeAndFlush(input.allocator.buffer(bytes: line)).get()
    }

    /// Ends the child's input: it has nothing more to do after its current task.
    public func finishInput() async {
        guard isInputOpen else { return }
        isInputOpen = false
        try? await input.close().get()
    }

    /// Asks the child to stop (SIGTERM, then SIGKILL if it has not ended 3 s later); the outcome
    /// is then `.cancelled` unless it answered first.
    public func stop() { watch.stop() }

    public struct Messages: AsyncSequence {
        public typealias Element = Reply
        let session: ChildSession

        public struct AsyncIterator: AsyncIteratorProtocol {
            let session: ChildSession
            public mutating func next() async -> Reply? { await session.next() }
        }

        public func makeAsyncIterator() -> AsyncIterator { AsyncIterator(session: session) }
    }
}

/// A task sent after the child's input was closed.
public struct ChildInputClosed: Error {}
