import AsyncHTTPClient
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import JobMedia
import Logging
import MomentsConfig
import MomentsServer
import NIOCore
import ObjectStorage
import Store
import Testing

/// moto's request log (`MOMENTS_TEST_S3_REQUEST_LOG`, written by scripts/s3-test-server): the S3
/// requests a test makes, one line each (`"PUT /bucket/key HTTP/1.1" 200`).
struct S3RequestLog {
    let path: String
    let endpoint: String

    init() throws {
        let env = ProcessInfo.processInfo.environment
        guard let path = env["MOMENTS_TEST_S3_REQUEST_LOG"], !path.isEmpty,
            FileManager.default.fileExists(atPath: path), let endpoint = env["MOMENTS_TEST_S3_ENDPOINT"]
        else {
            throw MissingTestServer(
                what: "The S3 test server's request log (MOMENTS_TEST_S3_REQUEST_LOG)",
                how: "eval \"$(scripts/s3-test-server start)\"")
        }
        self.path = path
        self.endpoint = endpoint
    }

    /// Where the log ends now.
    func mark() throws -> Int { try Data(contentsOf: URL(fileURLWithPath: path)).count }

    static let fence = "/moments-log-fence-"

    /// The request lines logged since `mark`, up to now: moto logs a request once it has answered
    /// it, so a request of the test's own (a fence) is sent after every request of interest, and
    /// the log is read once the fence is in it (10 s at most).
    func lines(since mark: Int) async throws -> [String] {
        let fence = Self.fence + UUID().uuidString
        _ = try? await HTTPClient.shared.execute(HTTPClientRequest(url: endpoint + fence), timeout: .seconds(5))
        var text = ""
        let fenced = try await eventually {
            text = String(decoding: try Data(contentsOf: URL(fileURLWithPath: path)).dropFirst(mark), as: UTF8.self)
            return text.contains(fence)
        }
        // Without the fence the log may still lack requests: say so rather than count too few.
        if !fenced { Issue.record("moto never logged the fence request \(fence) (is it serving \(endpoint)?)") }
        return text.split(separator: "\n").map(String.init).filter { !$0.contains(Self.fence) }
    }
}

/// A resumable upload's bytes in the bucket: parts of at least 5 MiB but the last, written at most
/// about once a second while small appends arrive, and found (fetched, deleted) by the upload's own
/// keys, never by listing every upload of every account.
@Suite(
    "Resumable upload parts in the bucket",
    .enabled(if: !TestEngine.isEmbedded, "needs the shared engines (MOMENTS_TEST_ENGINE=postgresql+s3)"))
struct ResumableUploadPartTests {
    static let tus = ResumableUploadTests.tusHeaders

    static func patch(_ wire: Wire, _ location: String, key: String, offset: Int, _ bytes: Data) async throws
        -> Wire.Reply
    {
        try await wire.send(
            .PATCH, location, key: key,
            headers: tus + [
                ("Content-Type", "application/offset+octet-stream"), ("Upload-Offset", String(offset))
            ], body: bytes)
    }

    static func bucket(_ server: TestServer) throws -> S3MediaStorage {
        try #require(server.service.mediaStorage as? S3MediaStorage)
    }

    @Test func oneByteAppendsMakeAboutOneWriteASecondAndNoListing() async throws {
        let log = try S3RequestLog()
        let boot = try log.mark()
        let server = try await ResumableUploadTests.queueOnlyServer()
        let storage = try Self.bucket(server)
        let bucketName = server.service.settings.mediaStorage.bucket
        let video = try await Fixtures.data(.short)
        let count = 150
        @Sendable func isListing(_ line: String) -> Bool { line.contains("\"GET /\(bucketName)?") && line.contains("list-type") }
        try await withServer(server, .live) { client in
            // The upload sweeper's first pass, at start, lists the bucket's leftovers: that one is
            // expected. Under load it can come late, so the count starts after it.
            _ = try await eventually(within: 20) { try await log.lines(since: boot).contains(where: isListing) }
            let wire = try Wire(client)
            let (_, key) = try await client.createAccount()
            let created = try await wire.send(
                .POST, "/api/v1/uploads", key: key,
                headers: Self.tus + [
                    ("Upload-Length", String(video.count)), ("Upload-Metadata", "target_duration MTA=,quality bG93")
                ])
            let location = try #require(created.header("Location"))
            let id = try #require(location.split(separator: "/").last.map(String.init))
            let mark = try log.mark()
            let started = Date()
            for offset in 0..<count {
                let reply = try await Self.patch(
                    wire, location, key: key, offset: offset, video.subdata(in: offset..<(offset + 1)))
                #expect(reply.status == 204, "\(reply.text)")
            }
            let seconds = Date().timeIntervalSince(started)
            // The rest in one append: the upload becomes a job, its parts are deleted.
            let rest = try await Self.patch(
                wire, location, key: key, offset: count, video.subdata(in: count..<video.count))
            #expect(rest.status == 204, "\(rest.text)")
            #expect(rest.header("Moments-Job-Id") != nil)
            let lines = try await log.lines(since: mark)
            let writes = lines.filter { $0.contains("\"PUT /\(bucketName)/uploads/\(id)/") }
            #expect(
                writes.count <= Int(seconds) + 3,
                "\(count) one-byte appends in \(seconds) s made \(writes.count) part writes")
            let listings = lines.filter(isListing)
            #expect(listings.isEmpty, "fetching or removing an upload lists no prefix: \(listings)")
            #expect(
                try await storage.client.listObjects().filter { $0.key.hasPrefix("uploads/\(id)/") }.isEmpty,
                "its parts are deleted")
        }
    }

    @Test func partsReachTheMinimumSizeAndARemovedUploadLeavesNothing() async throws {
        let log = try S3RequestLog()
        let server = try await ResumableUploadTests.queueOnlyServer()
        let storage = try Self.bucket(server)
        let bucketName = server.service.settings.mediaStorage.bucket
        let big = Data((0..<(6 << 20)).map { UInt8(truncatingIfNeeded: $0 &* 31) })
        try await withServer(server, .live) { client in
            let wire = try Wire(client)
            let (_, key) = try await client.createAccount()
            let created = try await wire.send(
                .POST, "/api/v1/uploads", key: key,
                headers: Self.tus + [
                    ("Upload-Length", String(big.count + 4096)),
                    ("Upload-Metadata", "target_duration MTA=,quality bG93")
                ])
            let location = try #require(created.header("Location"))
            let id = try #require(location.split(separator: "/").last.map(String.init))
            let mark = try log.mark()
            // Under the minimum: one open part, written within about a second, then rewritten as it grows.
            let first = try await Self.patch(wire, location, key: key, offset: 0, big.prefix(3 << 20))
            #expect(first.status == 204)
            let second = try await Self.patch(
                wire, location, key: key, offset: 3 << 20, big.subdata(in: (3 << 20)..<(6 << 20)))
            #expect(second.status == 204)
            // 6 MiB reached: sealed as one part (written as the append records its offset).
            var sealed = try await storage.client.headObject(key: "uploads/\(id)/0000000000000000")
            for _ in 0..<40 where sealed?.size != Int64(6 << 20) {
                try await Task.sleep(for: .milliseconds(100))
                sealed = try await storage.client.headObject(key: "uploads/\(id)/0000000000000000")
            }
            #expect(sealed?.size == Int64(6 << 20), "one part of 6 MiB: \(String(describing: sealed))")
            let tail = try await Self.patch(wire, location, key: key, offset: 6 << 20, Data(repeating: 7, count: 100))
            #expect(tail.status == 204)
            var open: S3ObjectInfo?
            for _ in 0..<40 where open == nil {
                try await Task.sleep(for: .milliseconds(100))
                open = try await storage.client.headObject(key: "uploads/\(id)/\(String(format: "%016d", 6 << 20))")
            }
            #expect(open?.size == 100, "the open part follows the sealed one")
            // Cancelled: every part deleted, by its own keys.
            let deleted = try await wire.send(.DELETE, location, key: key, headers: Self.tus)
            #expect(deleted.status == 204)
            let lines = try await log.lines(since: mark)
            #expect(lines.filter { $0.contains("\"GET /\(bucketName)?") && $0.contains("list-type") }.isEmpty)
            #expect(
                try await storage.client.listObjects().filter { $0.key.hasPrefix("uploads/\(id)/") }.isEmpty,
                "its parts are deleted")
        }
    }
}
