import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import NIOHTTP1
import Store
import Testing

/// `GET /api/v1/jobs/{id}/events`: a job's progress pushed as server-sent events, from the store.
@Suite("Job events (server-sent events)")
struct JobEventsTests {
    struct Event {
        var id: String?
        var name: String?
        var data: [String: Any]
    }

    /// The events of a `text/event-stream` body, and its comment lines.
    static func parse(_ text: String) throws -> (events: [Event], comments: [String], retry: Int?) {
        var events: [Event] = [], comments: [String] = [], retry: Int?
        for block in text.components(separatedBy: "\n\n") where !block.isEmpty {
            var event = Event(data: [:])
            var data: String?
            for line in block.split(separator: "\n", omittingEmptySubsequences: false) {
                if line.hasPrefix(":") { comments.append(String(line)); continue }
                let parts = line.split(separator: ":", maxSplits: 1)
                guard parts.count == 2 else { continue }
                let value = parts[1].hasPrefix(" ") ? String(parts[1].dropFirst()) : String(parts[1])
                switch parts[0] {
                case "id": event.id = value
                case "event": event.name = value
                case "data": data = (data.map { $0 + "\n" } ?? "") + value
                case "retry": retry = Int(value)
                default: break
                }
            }
            if let data {
                event.data = try JSONSerialization.jsonObject(with: Data(data.utf8)) as? [String: Any] ?? [:]
                events.append(event)
            }
        }
        return (events, comments, retry)
    }

    /// The stream follows a job to its end: an event per change with the /status fields, ids on
    /// each, progress never going back, the final state last, then the stream closes. A client
    /// that reconnects with the final event's id gets 204 (EventSource stops); with an older id,
    /// only what is newer.
    @Test func streamFollowsAJobToItsEnd() async throws {
        let server = try await TestServer()
        let video = try await Fixtures.data(.short)
        try await withServer(server, .live) { client in
            let (_, key) = try await client.createAccount()
            let accepted = try await client.upload(key: key, file: video, fields: [("target_duration", "5")])
            let job = try #require(try accepted.json()["job_id"] as? String)
            // The stream lasts as long as the job: on a connection of its own with a deadline to
            // match. So do the requests after it: the test client's connection sat idle meanwhile,
            // maybe past the server's idle timeout (60 s), which closes it.
            let wire = try Wire(client)
            let response = try await wire.send(.GET, "/api/v1/jobs/\(job)/events", key: key, timeout: .seconds(240))
            #expect(response.status == 200)
            #expect(response.header("Content-Type")?.hasPrefix("text/event-stream") == true)
            #expect(response.header("Cache-Control") == "no-cache")
            let (events, _, retry) = try Self.parse(response.text)
            #expect(retry == 2000)
            #expect(events.count >= 2, "\(response.text)")
            let final = try #require(events.last)
            #expect(final.name == "completed" && final.data["status"] as? String == "completed", "\(final.data)")
            #expect(
                final.data["result_url"] as? String == "\(server.service.settings.baseURL)/api/v1/jobs/\(job)/download")
            for event in events {
                #expect(event.id?.isEmpty == false)
                #expect(
                    Set(event.data.keys) == ["job_id", "status", "progress", "message", "result_url"], "\(event.data)")
                #expect(event.data["job_id"] as? String == job)
                #expect(event.name == event.data["status"] as? String)
            }
            #expect(Set(events.compactMap(\.id)).count == events.count, "ids are distinct")
            let processing = events.filter { $0.name == "processing" }.compactMap { $0.data["progress"] as? Int }
            #expect(processing == processing.sorted(), "progress never goes back: \(processing)")
            // The same fields and values as /status once the job has ended.
            let status = try await wire.send(.GET, "/api/v1/jobs/\(job)/status", key: key).json()
            #expect(NSDictionary(dictionary: status).isEqual(to: final.data))

            let done = try await wire.send(
                .GET, "/api/v1/jobs/\(job)/events", key: key, headers: [("Last-Event-ID", try #require(final.id))])
            #expect(done.status == 204)
            let older = try await wire.send(
                .GET, "/api/v1/jobs/\(job)/events", key: key,
                headers: [("Last-Event-ID", try #require(events.first?.id))])
            let replay = try Self.parse(older.text).events
            #expect(replay.map(\.id) == [final.id], "only the state newer than the client's: \(older.text)")
        }
    }

    /// A quiet stream sends a comment line every `http.eventsHeartbeatSeconds`; a cancel ends it
    /// with the cancelled state.
    @Test func heartbeatsWhileNothingChanges() async throws {
        let server = try await TestServer { s in
            s.workers = 0  // the job waits in the queue
            s.eventsHeartbeatSeconds = 0.3
        }
        let video = try await Fixtures.data(.tiny)
        try await withServer(server, .live) { client in
            let (_, key) = try await client.createAccount()
            let accepted = try await client.upload(key: key, file: video, fields: [("target_duration", "5")])
            let job = try #require(try accepted.json()["job_id"] as? String)
            // Cancelled through the service 3 s into the stream.
            let service = server.service
            let account = try #require(try await service.account(apiKey: key))
            let cancel = Task {
                try await Task.sleep(for: .milliseconds(3000))
                return try await service.cancelOrDelete(id: job, account: account)?.status
            }
            let response = try await Wire(client).send(
                .GET, "/api/v1/jobs/\(job)/events", key: key, timeout: .seconds(120))
            #expect(try await cancel.value == .cancelled)
            let (events, comments, _) = try Self.parse(response.text)
            #expect(comments.filter { $0 == ": ping" }.count >= 2, "\(response.text)")
            #expect(events.map(\.name) == ["pending", "cancelled"], "\(response.text)")
        }
    }

    /// Changes reach a stream from the store's events, not from reading the store on a timer: with
    /// the heartbeat (the stream's only timer) at 60 s, a worker's claim and progress and the
    /// owner's cancel, made straight in the store, end the stream within seconds (SQLite: the
    /// commit observer; PostgreSQL: the trigger's NOTIFY).
    @Test func changesArriveFromTheStoresEvents() async throws {
        let server = try await TestServer { s in
            s.workers = 0
            s.eventsHeartbeatSeconds = 60
        }
        let video = try await Fixtures.data(.tiny)
        try await withServer(server, .live) { client in
            let (accountId, key) = try await client.createAccount()
            let accepted = try await client.upload(key: key, file: video, fields: [("target_duration", "5")])
            let job = try #require(try accepted.json()["job_id"] as? String)
            let (heads, head) = AsyncStream<Int>.makeStream()
            let stream = Task {
                try await Wire(client).send(
                    .GET, "/api/v1/jobs/\(job)/events", key: key, timeout: .seconds(50),
                    headReceived: { head.yield($0) })
            }
            var iterator = heads.makeAsyncIterator()
            #expect(await iterator.next() == 200)
            let store = server.service.database
            let claimed = try await store.claimNextJob(worker: "test-worker", leaseSeconds: 60, now: Date())
            #expect(claimed?.id == job)
            #expect(
                try await store.updateProgress(
                    id: job, worker: "test-worker", progress: 40, stage: "rendering",
                    message: "Rendering your highlight", now: Date()))
            let cancelled = Date()
            #expect(try await store.cancel(id: job, accountId: accountId, now: Date()) != nil)
            let response = try await stream.value
            let waited = Date().timeIntervalSince(cancelled)
            #expect(waited < 5, "the stream ended \(waited) s after the cancel")
            let (events, _, _) = try Self.parse(response.text)
            #expect(events.first?.name == "pending" && events.last?.name == "cancelled", "\(response.text)")
        }
    }

    /// curl, a client that is not ours, reads the stream to the job's end (`-N`, no buffering),
    /// then reconnects with the last event's id and gets 204, and with an older id only what is
    /// newer: what an EventSource does after a dropped connection.
    @Test func curlReadsTheStreamAndResumes() async throws {
        let server = try await TestServer()
        let video = try await Fixtures.data(.short)
        try await withServer(server, .live) { client in
            let (_, key) = try await client.createAccount()
            let job = try #require(
                try await client.upload(key: key, file: video, fields: [("target_duration", "5")]).json()["job_id"]
                    as? String)
            let url = "http://127.0.0.1:\(try #require(client.port))/api/v1/jobs/\(job)/events"
            let auth = "Authorization: Bearer \(key)"
            let stream = try await Curl.run(["-sS", "-N", "--max-time", "120", "-H", auth, url])
            let (events, _, _) = try Self.parse(stream)
            let final = try #require(events.last)
            #expect(final.name == "completed", "\(stream)")
            let done = try await Curl.run([
                "-sS", "-o", "/dev/null", "-w", "%{http_code}", "-H", auth, "-H",
                "Last-Event-ID: \(try #require(final.id))", url
            ])
            #expect(done == "204")
            let resumed = try await Curl.run([
                "-sS", "-N", "--max-time", "30", "-H", auth, "-H", "Last-Event-ID: \(try #require(events.first?.id))",
                url
            ])
            #expect(try Self.parse(resumed).events.map(\.id) == [final.id], "\(resumed)")
        }
    }

    /// Another account's job does not exist for this key; an unknown id is a 404 problem too.
    @Test func otherAccountsJobIsNotFound() async throws {
        let server = try await TestServer { s in s.workers = 0 }
        let video = try await Fixtures.data(.tiny)
        try await withServer(server, .router) { client in
            let (_, owner) = try await client.createAccount()
            let (_, stranger) = try await client.createAccount()
            let job = try #require(try await client.upload(key: owner, file: video).json()["job_id"] as? String)
            try await client.get("/api/v1/jobs/\(job)/events", key: stranger).expectProblem(.notFound)
            try await client.get("/api/v1/jobs/nope/events", key: owner).expectProblem(.notFound)
            try await client.get("/api/v1/jobs/\(job)/events", key: nil).expectProblem(.unauthorized)
        }
    }
}
