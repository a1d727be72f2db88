import Accounts
import Foundation
import HTTPTypes
import HTTPEdge
import Hummingbird
import MomentsConfig
import Store
import Synchronization
import Workers
import Wording

/// A job's progress pushed as server-sent events (`GET /api/v1/jobs/{id}/events`,
/// `text/event-stream`): the same fields as `/status`, one event each time they change, until the
/// job ends. The events come from the job store, so any API process serves any job's stream.
///
/// - Each event has `id:` (the snapshot it carries: time of the job's last change, status and
///   progress), `event:` (the job's status) and `data:` (the `/status` JSON on one line).
/// - `Last-Event-ID` (sent by EventSource when it reconnects) skips the snapshot the client already
///   has; once the job has ended and the client has its final event, the answer is 204, which
///   tells EventSource to stop reconnecting.
/// - A comment line (`: ping`) goes out when nothing else was sent for `http.eventsHeartbeatSeconds`.
/// - The stream closes after the final state (completed, failed or cancelled).
struct JobEventsController {
    let jobs: JobControl
    let accounts: AccountService
    let settings: ServiceSettings
    /// The store's events: a stream reads its job again when the store says it changed
    /// (`StoreEvent.jobChanged`: SQLite's commit observer, PostgreSQL's trigger and LISTEN).
    let storeEvents: @Sendable () -> AsyncStream<StoreEvent>
    /// Streams open in this process, per account (`http.maxEventStreamsPerAccount`).
    let slots = EventStreamSlots()
    /// What EventSource waits before reconnecting (the stream's `retry:` field).
    static let reconnectMilliseconds = 2000

    func addRoutes(to group: RouterGroup<AppRequestContext>, table: RouteTable) {
        table.add(.get, "/api/v1/jobs/:id/events", on: group, use: events)
    }

    /// The state a client has seen: what an event carries and its id.
    struct Snapshot: Equatable {
        var id: String
        var status: JobStatusResponse

        init(_ job: Job, baseURL: String) {
            status = JobStatusResponse(job, baseURL: baseURL)
            id =
                "\(Int64((job.updatedAt.timeIntervalSince1970 * 1000).rounded()))-\(job.status.rawValue)-\(job.progress)"
        }

        static func == (a: Snapshot, b: Snapshot) -> Bool { a.id == b.id && a.status.message == b.status.message }

        /// `id:`, `event:` and `data:` lines and the blank line that ends the event.
        var event: ByteBuffer {
            var out = ByteBuffer()
            out.reserveCapacity(320)
            out.writeStaticString("id: ")
            out.writeString(id)
            out.writeStaticString("\nevent: ")
            out.writeString(status.status.rawValue)
            out.writeStaticString("\ndata: ")
            status.write(to: &out)  // one line: JSON strings escape their newlines
            out.writeStaticString("\n\n")
            return out
        }
    }

    @Sendable func events(_ request: Request, context: AppRequestContext) async throws -> Response {
        let account = try context.requireAccount()
        let id = try context.parameters.require("id")
        let base = settings.baseURL
        guard let first = try await jobs.job(id: id, account: account) else { throw Problem.jobNotFound(id) }
        let lastSeen = request.headers[HTTPField.Name("Last-Event-ID")!]
        let snapshot = Snapshot(first, baseURL: base)
        if first.status.isFinished, lastSeen == snapshot.id {
            return Response(status: .noContent)
        }
        // One account cannot hold an unbounded number of streams (each reads the store at each change of its job).
        guard let slot = slots.take(account: account.id, limit: settings.maxEventStreamsPerAccount) else {
            let limit = settings.maxEventStreamsPerAccount
            throw Problem(
                .tooManyRequests, code: "too_many_streams",
                detail:
                    Say.tooManyStreams(limit: limit),
                extensions: ["limit": .int(limit)], headers: [.retryAfter: "10"])
        }
        let heartbeat = Duration.milliseconds(Int64((settings.eventsHeartbeatSeconds * 1000).rounded()))
        // Subscribed before the stream's own read of the job, so no change after it is missed. A key
        // revoked (or an account disabled) while the stream is open ends it within a few seconds.
        let wakeUps = StreamWakeUps(job: id, events: storeEvents(), heartbeat: heartbeat) { revoked in
            APIKeyMiddleware.watchKey(of: request, accounts: accounts, onRevoked: revoked)
        }
        let follow = Follow(
            jobs: jobs, id: id, account: account, baseURL: base, lastSeen: lastSeen, heartbeat: heartbeat)
        let headers: HTTPFields = [
            .contentType: "text/event-stream; charset=utf-8",
            .cacheControl: "no-cache",
            HTTPField.Name("X-Accel-Buffering")!: "no"  // nginx: pass each event on at once
        ]
        return Response(
            status: .ok, headers: headers,
            body: ResponseBody { writer in
                // The slot goes back and the watchers stop when the stream ends, however it ends.
                defer {
                    wakeUps.stop()
                    slot.release()
                }
                try await follow.run(writer: &writer, from: snapshot, wakeUps: wakeUps)
            })
    }

    /// One stream's loop: an event for each new state of the job, a ping when quiet, until the job
    /// ends, is deleted, or the key goes.
    struct Follow: Sendable {
        let jobs: JobControl
        let id: String
        let account: Account
        let baseURL: String
        let lastSeen: String?
        let heartbeat: Duration

        func run(
            writer: inout any ResponseBodyWriter, from first: Snapshot, wakeUps: StreamWakeUps
        ) async throws {
            let clock = ContinuousClock()
            var preamble = ByteBuffer()
            preamble.writeString("retry: \(JobEventsController.reconnectMilliseconds)\n\n")
            try await writer.write(preamble)
            var sent: Snapshot? = nil
            // Read once more now: a change between the first read and the subscription is not lost.
            var current = try await jobs.job(id: id, account: account).map { Snapshot($0, baseURL: baseURL) } ?? first
            var lastWrite = clock.now
            var wakes = wakeUps.wakes.makeAsyncIterator()
            while true {
                if current != sent, lastSeen != current.id || sent != nil {
                    try await writer.write(current.event)
                    lastWrite = clock.now
                }
                sent = current
                if current.status.status.isFinished { break }
                guard await wakes.next() != nil, !wakeUps.revoked.isSet else { break }
                if clock.now - lastWrite >= heartbeat {
                    var ping = ByteBuffer()
                    ping.writeStaticString(": ping\n\n")
                    try await writer.write(ping)
                    lastWrite = clock.now
                }
                // A job deleted meanwhile ends the stream (its owner removed it).
                guard let job = try await jobs.job(id: id, account: account) else { break }
                current = Snapshot(job, baseURL: baseURL)
            }
            try await writer.finish(nil)
        }
    }
}

/// What wakes a job's event stream: the store saying its job changed (or that any may have), its
/// key revoked, or the heartbeat due (the job is then read again too, should an event have been
/// lost). Wake-ups that come while the stream is busy collapse into one. Its tasks hold the
/// continuation, not this object.
final class StreamWakeUps: Sendable {
    let wakes: AsyncStream<Void>
    let revoked = EventStreamSlots.Flag()
    private let wake: AsyncStream<Void>.Continuation
    private let tasks: [Task<Void, Never>]

    init(
        job id: String, events: AsyncStream<StoreEvent>, heartbeat: Duration,
        watchKey: (@escaping @Sendable () -> Void) -> Task<Void, Never>
    ) {
        let (wakes, wake) = AsyncStream<Void>.makeStream(bufferingPolicy: .bufferingNewest(1))
        let revoked = self.revoked
        self.wakes = wakes
        self.wake = wake
        tasks = [
            Task {
                for await event in events {
                    if case .jobChanged(let changed) = event, changed == nil || changed == id { wake.yield() }
                }
            },
            Task { while (try? await Task.sleep(for: heartbeat)) != nil { wake.yield() } },
            watchKey {
                revoked.set()
                wake.yield()
            }
        ]
    }

    func stop() {
        for task in tasks { task.cancel() }
        wake.finish()
    }

    /// Should the response never run (the client went before its head), its watchers stop when
    /// the last reference goes, as the stream's slot does.
    deinit { stop() }
}

/// Event streams open in this process, per account. A slot is given back by `release` or, should
/// the response never run, when the last reference to it goes.
final class EventStreamSlots: Sendable {
    private let open = Mutex<[String: Int]>([:])

    /// A slot for one more stream of `account`, or nil when it has `limit` open (0: no cap).
    func take(account: String, limit: Int) -> Slot? {
        let taken = open.withLock { open -> Bool in
            let count = open[account, default: 0]
            if limit > 0 && count >= limit { return false }
            open[account] = count + 1
            return true
        }
        return taken ? Slot(slots: self, account: account) : nil
    }

    fileprivate func give(_ account: String) {
        open.withLock { open in
            let left = open[account, default: 1] - 1
            open[account] = left > 0 ? left : nil
        }
    }

    /// Set once, read by the stream (its key stopped working).
    final class Flag: Sendable {
        private let value = Atomic<Bool>(false)
        func set() { value.store(true, ordering: .relaxed) }
        var isSet: Bool { value.load(ordering: .relaxed) }
    }

    final class Slot: Sendable {
        private let slots: EventStreamSlots
        private let account: String
        private let released = Atomic<Bool>(false)

        fileprivate init(slots: EventStreamSlots, account: String) { self.slots = slots; self.account = account }

        func release() {
            if !released.exchange(true, ordering: .relaxed) { slots.give(account) }
        }

        deinit { release() }
    }
}
