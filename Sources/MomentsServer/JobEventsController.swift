import Foundation
import HTTPTypes
import Hummingbird
import JobStore
import Jobs

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
    let service: JobService
    /// How often the store is read for a change while a stream is open.
    static let pollInterval = Duration.milliseconds(250)
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
            id = "\(Int64((job.updatedAt.timeIntervalSince1970 * 1000).rounded()))-\(job.status.rawValue)-\(job.progress)"
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
            status.write(to: &out) // one line: JSON strings escape their newlines
            out.writeStaticString("\n\n")
            return out
        }
    }

    @Sendable func events(_ request: Request, context: AppRequestContext) async throws -> Response {
        let account = try context.requireAccount()
        let id = try context.parameters.require("id")
        let base = service.settings.baseURL
        guard let first = try await service.job(id: id, account: account) else { throw Problem.jobNotFound(id) }
        let lastSeen = request.headers[HTTPField.Name("Last-Event-ID")!]
        let snapshot = Snapshot(first, baseURL: base)
        if first.status.isFinished, lastSeen == snapshot.id {
            return Response(status: .noContent)
        }
        let heartbeat = Duration.milliseconds(Int64((service.settings.eventsHeartbeatSeconds * 1000).rounded()))
        let service = self.service
        let headers: HTTPFields = [
            .contentType: "text/event-stream; charset=utf-8",
            .cacheControl: "no-cache",
            HTTPField.Name("X-Accel-Buffering")!: "no", // nginx: pass each event on at once
        ]
        return Response(status: .ok, headers: headers, body: ResponseBody { writer in
            let clock = ContinuousClock()
            var preamble = ByteBuffer()
            preamble.writeString("retry: \(Self.reconnectMilliseconds)\n\n")
            try await writer.write(preamble)
            var sent: Snapshot? = nil
            var current = snapshot
            var lastWrite = clock.now
            while true {
                if current != sent, lastSeen != current.id || sent != nil {
                    try await writer.write(current.event)
                    lastWrite = clock.now
                }
                sent = current
                if current.status.status.isFinished { break }
                try await Task.sleep(for: Self.pollInterval)
                if clock.now - lastWrite >= heartbeat {
                    var ping = ByteBuffer()
                    ping.writeStaticString(": ping\n\n")
                    try await writer.write(ping)
                    lastWrite = clock.now
                }
                // A job deleted meanwhile ends the stream (its owner removed it).
                guard let job = try await service.job(id: id, account: account) else { break }
                current = Snapshot(job, baseURL: base)
            }
            try await writer.finish(nil)
        })
    }
}
