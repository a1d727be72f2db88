import AsyncHTTPClient
import NIOCore
import NIOHTTP1
import Crypto
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Store
import Logging
import MomentsConfig
import MomentsServer
import PostgresStore
import Testing

/// The IETF draft flow as iOS URLSession and curl drive it, for every interop version.
@Suite("Resumable uploads (IETF draft)")
struct IETFResumableUploadTests {
    /// The request iOS sends for an upload task: the whole file in one POST with
    /// `Upload-Complete: ?1` (version 3: `Upload-Incomplete: ?0`). The server answers 104 with the
    /// upload's Location before reading the body; the connection drops at 60 %; HEAD tells the
    /// offset; a PATCH with the rest completes it and answers with the job; the stored input is
    /// the file byte for byte.
    @Test(arguments: [3, 4, 5, 6, 7, 8])
    func uploadCutOffResumes(version: Int) async throws {
        let server = try await ResumableUploadTests.queueOnlyServer()
        let video = try await Fixtures.data(.short)
        try await withServer(server, .live) { client in
            let wire = try Wire(client)
            let (_, key) = try await client.createAccount()
            let completeHeader = version == 3 ? "Upload-Incomplete: ?0" : "Upload-Complete: ?1"
            let cut = video.count * 6 / 10
            let port = wire.port
            let informational = try await RawConnection.offPool { () -> RawConnection.Response? in
                let connection = try RawConnection(port: port)
                connection.send(
                    "POST /api/v1/uploads?target_duration=10 HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer \(key)\r\n"
                        + "Upload-Draft-Interop-Version: \(version)\r\n\(completeHeader)\r\nContent-Length: \(video.count)\r\n\r\n"
                )
                let interim = connection.readResponse(timeout: 10)
                connection.send([UInt8](video.prefix(cut)))
                Thread.sleep(forTimeInterval: 0.3)
                connection.close()
                return interim
            }
            let interim = try #require(informational, "104 Upload Resumption Supported before the body")
            #expect(interim.status == 104)
            #expect(interim.header("Upload-Draft-Interop-Version") == String(version))
            #expect(
                (interim.header("Upload-Limit") != nil) == (version >= 6), "Upload-Limit from version 6 (required in 8)"
            )
            let location = try #require(interim.header("Location"))
            #expect(location.hasPrefix("/api/v1/uploads/"))
            let ietf = [("Upload-Draft-Interop-Version", String(version))]
            var offset: Int?
            for _ in 0..<50 {
                let head = try await wire.send(.HEAD, location, key: key, headers: ietf)
                #expect(head.status == 204)
                #expect(head.header("Cache-Control") == "no-store")
                #expect(
                    head.header(version == 3 ? "Upload-Incomplete" : "Upload-Complete") == (version == 3 ? "?1" : "?0"))
                offset = head.header("Upload-Offset").flatMap { Int($0) }
                if offset == cut { break }
                try await Task.sleep(for: .milliseconds(100))
            }
            #expect(offset == cut)
            let wrong = try await wire.send(
                .PATCH, location, key: key,
                headers: ietf + [
                    ("Upload-Offset", "1"),
                    (version == 3 ? "Upload-Incomplete" : "Upload-Complete", version == 3 ? "?0" : "?1"),
                    ("Content-Type", "application/partial-upload")
                ], body: video.suffix(from: cut))
            #expect(wrong.status == 409)
            #expect(wrong.header("Upload-Offset") == String(cut))
            let rest = try await wire.send(
                .PATCH, location, key: key,
                headers: ietf + [
                    ("Upload-Offset", String(cut)),
                    (version == 3 ? "Upload-Incomplete" : "Upload-Complete", version == 3 ? "?0" : "?1"),
                    ("Content-Type", "application/partial-upload")
                ], body: video.suffix(from: cut))
            #expect(rest.status == 200, "\(rest.text)")
            #expect(rest.header(version == 3 ? "Upload-Incomplete" : "Upload-Complete") == (version == 3 ? "?0" : "?1"))
            let job = try #require(try rest.json()["job_id"] as? String)
            #expect(try await ResumableUploadTests.storedInput(server, job: job) == video)
        }
    }

    /// `Upload-Limit` on an upload is the caller's plan's: a free account is told its plan's
    /// largest file, not the server's (OPTIONS, asked of no account, tells the server's).
    @Test func uploadLimitIsThePlans() async throws {
        var plans = TestServer.roomyPlans
        plans.free.maxUploadBytes = 50_000_000
        let server = try await TestServer(plans: plans) { $0.workers = 0 }
        try await withServer(server, .live) { client in
            let wire = try Wire(client)
            let (_, key) = try await client.createAccount()
            let ietf = [("Upload-Draft-Interop-Version", "8")]
            let created = try await wire.send(
                .POST, "/api/v1/uploads?target_duration=10", key: key,
                headers: ietf + [("Upload-Complete", "?0"), ("Upload-Length", "1000")], body: Data())
            #expect(created.status == 201, "\(created.status)")
            #expect(created.header("Upload-Limit")?.hasPrefix("max-size=50000000,") == true, "\(created.headers)")
            let location = try #require(created.header("Location"))
            let head = try await wire.send(.HEAD, location, key: key, headers: ietf)
            #expect(head.header("Upload-Limit")?.hasPrefix("max-size=50000000,") == true, "\(head.headers)")
            let options = try await wire.send(.OPTIONS, "/api/v1/uploads", key: nil, headers: ietf)
            #expect(
                options.header("Upload-Limit") == "max-size=\(server.service.settings.maxUploadBytes)",
                "\(options.headers)")
        }
    }

    /// A version the server does not know (or none) is a plain upload of the raw body: no 104,
    /// the job is made, and the answer is the plain upload's.
    @Test func unknownVersionIsAPlainUpload() async throws {
        let server = try await ResumableUploadTests.queueOnlyServer()
        let video = try await Fixtures.data(.tiny)
        try await withServer(server, .live) { client in
            let (_, key) = try await client.createAccount()
            let port = try #require(client.port)
            let first = try await RawConnection.offPool { () -> RawConnection.Response? in
                let connection = try RawConnection(port: port)
                connection.send(
                    "POST /api/v1/uploads HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer \(key)\r\n"
                        + "Upload-Draft-Interop-Version: 99\r\nUpload-Complete: ?1\r\nContent-Length: \(video.count)\r\n\r\n"
                )
                connection.send([UInt8](video))
                return connection.readResponse(timeout: 30)
            }
            let response = try #require(first)
            #expect(response.status == 201, "\(response.head)")
            #expect(response.body.contains("job_id"))
        }
    }

    /// curl drives the draft's flow by hand: create with `Upload-Complete: ?0` and a first part
    /// (104, then 201 with Location and Upload-Offset), HEAD, append the rest with
    /// `Upload-Complete: ?1` (200 with the job). The job then completes.
    @Test func curlDrivesTheDraftFlow() async throws {
        let server = try await TestServer()
        let video = try await Fixtures.data(.short)
        let scratch = Scratch()
        let half = video.count / 2
        try video.prefix(half).write(to: URL(fileURLWithPath: scratch.path("part1")))
        try video.suffix(from: half).write(to: URL(fileURLWithPath: scratch.path("part2")))
        try await withServer(server, .live) { client in
            let (_, key) = try await client.createAccount()
            let base = "http://127.0.0.1:\(try #require(client.port))"
            let auth = "Authorization: Bearer \(key)"
            let created = try await Curl.run([
                "-sS", "-i", "-X", "POST", "-H", auth, "-H", "Upload-Draft-Interop-Version: 6", "-H",
                "Upload-Complete: ?0",
                "--data-binary", "@" + scratch.path("part1"), base + "/api/v1/uploads?target_duration=5&quality=low"
            ])
            #expect(created.contains("HTTP/1.1 104"), "\(created)")
            #expect(created.contains("HTTP/1.1 201"), "\(created)")
            let location = try #require(Curl.header("Location", in: created))
            let head = try await Curl.run([
                "-sS", "-I", "-H", auth, "-H", "Upload-Draft-Interop-Version: 6", base + location
            ])
            #expect(Curl.header("Upload-Offset", in: head) == String(half), "\(head)")
            #expect(Curl.header("Upload-Complete", in: head) == "?0")
            let appended = try await Curl.run([
                "-sS", "-i", "-X", "PATCH", "-H", auth, "-H", "Upload-Draft-Interop-Version: 6",
                "-H", "Upload-Offset: \(half)", "-H", "Upload-Complete: ?1", "-H",
                "Content-Type: application/partial-upload",
                "--data-binary", "@" + scratch.path("part2"), base + location
            ])
            #expect(appended.contains("HTTP/1.1 200"), "\(appended)")
            let body = try #require(appended.components(separatedBy: "\r\n\r\n").last)
            let json = try JSONSerialization.jsonObject(with: Data(body.utf8)) as? [String: Any]
            let job = try #require(json?["job_id"] as? String)
            let statuses = try await client.poll(job: job, key: key) {
                ["completed", "failed"].contains($0["status"] as? String)
            }
            #expect(statuses.last?["status"] as? String == "completed", "\(statuses.last ?? [:])")
        }
    }
}
