import Highlight
import AsyncHTTPClient
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import JobMedia
import Logging
import MomentsConfig
@testable import moments
import HTTPEdge
import MomentsServer
import NIOCore
import ObjectStorage
import Store
import Testing

/// The moto server of `scripts/s3-test-server start` (its MOMENTS_TEST_S3_* variables).
enum S3TestEnvironment {
    struct Values { var endpoint: String; var accessKey: String; var secretKey: String }

    /// The server's address and keys, or a failure that says how to start it.
    static func values() throws -> Values {
        let env = ProcessInfo.processInfo.environment
        guard let endpoint = env["MOMENTS_TEST_S3_ENDPOINT"], !endpoint.isEmpty,
            let access = env["MOMENTS_TEST_S3_ACCESS_KEY_ID"], !access.isEmpty,
            let secret = env["MOMENTS_TEST_S3_SECRET_ACCESS_KEY"], !secret.isEmpty
        else {
            let message =
                "S3StorageTests need the local S3 server: run `eval \"$(scripts/s3-test-server start)\"` first (MOMENTS_TEST_S3_ENDPOINT, MOMENTS_TEST_S3_ACCESS_KEY_ID and MOMENTS_TEST_S3_SECRET_ACCESS_KEY are not set)"
            Issue.record(Comment(rawValue: message))
            throw S3TestEnvironmentMissing(description: message)
        }
        return Values(endpoint: endpoint, accessKey: access, secretKey: secret)
    }

    struct S3TestEnvironmentMissing: Error, CustomStringConvertible { var description: String }
}

/// A server whose media live in a fresh bucket of the test S3 server.
struct S3TestServer {
    let scratch = Scratch()
    let service: MomentsServices
    let storage: S3MediaStorage
    let app: any ApplicationProtocol
    let bucket: String

    /// - Parameter unreachable: the bucket's address is a loopback port nothing listens on, and the
    ///   client gives up quickly (one retry, 1 s to connect).
    init(
        prefix: String = "", unreachable: Bool = false, clock: TestClock? = nil,
        _ configure: (inout ServiceSettings) -> Void = { _ in }
    ) async throws {
        let s3 = try S3TestEnvironment.values()
        bucket = "moments-test-\(UUID().uuidString.lowercased().prefix(18))"
        var settings = ServiceSettings()
        settings.storagePath = scratch.path("storage")
        settings.port = 0
        settings.minFreeBytes = 1 << 20
        settings.progressIntervalMs = 50
        settings.mediaStorage.backend = "s3"
        settings.mediaStorage.endpoint = unreachable ? "http://127.0.0.1:9" : s3.endpoint
        settings.mediaStorage.bucket = bucket
        settings.mediaStorage.pathStyle = true
        settings.mediaStorage.prefix = prefix
        configure(&settings)
        var logger = Logger(label: "moments-s3-test")
        logger.logLevel = .critical
        let environment = ["AWS_ACCESS_KEY_ID": s3.accessKey, "AWS_SECRET_ACCESS_KEY": s3.secretKey]
        if unreachable {
            var configuration = try MediaStorageFactory.s3Configuration(settings.mediaStorage, environment: environment)
            configuration.retry = S3RetryPolicy(maxAttempts: 2, baseDelay: .milliseconds(10))
            storage = S3MediaStorage(
                client: S3Client(configuration: configuration, httpClient: Self.impatientHTTPClient, logger: logger),
                prefix: "", scratchDirectory: scratch.path("storage/scratch"), logger: logger)
        } else {
            let made = try MediaStorageFactory.make(
                settings: settings, layout: StorageLayout(root: settings.storagePath),
                environment: environment, logger: logger)
            storage = try #require(made as? S3MediaStorage)
            try await storage.client.createBucket()
        }
        var appStore = AppStoreSettings()
        appStore.rootCertificates = [scratch.path("apple-root.cer")]
        let now: @Sendable () -> Date
        if let clock { now = { clock.now } } else { now = { Date() } }
        // Without re-cuts, inputs are deleted once processed (RecutTests covers kept inputs and
        // server-side copies on S3 in the PostgreSQL + S3 run).
        var plans = TestServer.roomyPlans
        plans.free.recuts = false
        service = try makeServices(
            settings: settings, media: MediaDefaults(), plans: plans, appStore: appStore,
            mediaStorage: storage, logger: logger, clock: now)
        app = buildApplication(service, logger: logger, background: service.background).0
    }

    /// Every key in the bucket.
    func keys() async throws -> [String] { try await storage.client.listObjects().map(\.key).sorted() }

    /// The job's keys (the bucket is listed whole: moto cannot check a listing whose prefix holds a `/`).
    func keys(ofJob id: String) async throws -> [String] {
        try await keys().filter { $0.hasPrefix(storage.jobsPrefix + id + "/") }
    }

    /// The job's keys once its input object is gone (the worker deletes it just after it records
    /// the job's end, so a poll can see the status first); up to 5 s.
    func settledKeys(ofJob id: String) async throws -> [String] {
        var keys = try await keys(ofJob: id)
        for _ in 0..<50 where keys.contains(where: { $0.hasSuffix("/input") }) {
            try await Task.sleep(for: .milliseconds(100))
            keys = try await self.keys(ofJob: id)
        }
        return keys
    }

    /// Folders left under storage/scratch.
    var scratchFolders: [String] {
        (try? FileManager.default.contentsOfDirectory(atPath: storage.scratchDirectory)) ?? []
    }

    /// Scratch folders still there after `seconds` (the worker removes its folder just after it
    /// records the job's end, completed or failed, so a poll can see the status first).
    func scratchFoldersLeft(after seconds: Double = 5) async throws -> [String] {
        let deadline = Date().addingTimeInterval(seconds)
        while !scratchFolders.isEmpty, Date() < deadline { try await Task.sleep(for: .milliseconds(50)) }
        return scratchFolders
    }

    func object(_ key: String) async throws -> Data {
        let path = scratch.path("object-\(UUID().uuidString)")
        try await storage.client.getObject(key: key, toFileAt: path)
        defer { try? FileManager.default.removeItem(atPath: path) }
        return try Data(contentsOf: URL(fileURLWithPath: path))
    }

    /// Runs the test over real HTTP (moto checks every signature).
    func run<T: Sendable>(_ test: @Sendable (any TestClientProtocol) async throws -> T) async throws -> T {
        try await runS3Test(app, test)
    }

    /// Gives up on an unreachable address within about a second.
    static let impatientHTTPClient: HTTPClient = {
        var config = HTTPClient.Configuration()
        config.timeout = .init(connect: .seconds(1), read: .seconds(5))
        return HTTPClient(eventLoopGroup: HTTPClient.defaultEventLoopGroup, configuration: config)
    }()
}

/// moto's switch for signature checks (`POST /moto-api/reset-auth`: "inf" = off, "0" = on). moto
/// cannot check the signature of a presigned URL, so that one GET runs with its checks off.
enum MotoAuthentication {
    static func withChecksOff<T>(_ body: () async throws -> T) async throws -> T {
        try await set("inf")
        do {
            let result = try await body()
            try await set("0")
            return result
        } catch {
            try? await set("0")
            throw error
        }
    }

    private static func set(_ count: String) async throws {
        var request = HTTPClientRequest(url: try S3TestEnvironment.values().endpoint + "/moto-api/reset-auth")
        request.method = .POST
        request.headers.add(name: "content-type", value: "text/plain")
        request.body = .bytes(ByteBuffer(string: count))
        let response = try await S3MediaStorage.sharedHTTPClient.execute(request, timeout: .seconds(10))
        _ = try await response.body.collect(upTo: 4096)
        #expect(response.status == .ok)
    }
}

private func runS3Test<App: ApplicationProtocol, T: Sendable>(
    _ app: App, _ test: @Sendable (any TestClientProtocol) async throws -> T
) async throws -> T {
    try await app.test(.live) { client in try await test(client) }
}

extension TestClientProtocol {
    /// Uploads the video and waits for the job to finish; returns its id and final status.
    func uploadAndWait(_ video: Data, key: String) async throws -> (String, String) {
        let upload = try await self.upload(
            key: key, file: video, fields: [("target_duration", "5"), ("quality", "low")])
        #expect(upload.status == .ok, "\(upload.text)")
        let job = try #require(try upload.json()["job_id"] as? String)
        let statuses = try await poll(job: job, key: key) {
            ["completed", "failed"].contains($0["status"] as? String ?? "")
        }
        return (job, statuses.last?["status"] as? String ?? "")
    }
}

@Suite("Media in S3 (moto)", .serialized)
struct S3StorageTests {
    /// Upload, process, download (whole, a range, HEAD, an unsatisfiable range), delete: every byte
    /// comes from the bucket, the scratch folder is empty afterwards, the objects are gone after DELETE.
    @Test func roundTripThroughTheBucket() async throws {
        let server = try await S3TestServer(prefix: "tenant-a/")
        let video = try await Fixtures.data(.short)
        try await server.run { client in
            let (_, key) = try await client.createAccount()
            let (job, status) = try await client.uploadAndWait(video, key: key)
            #expect(status == "completed")
            // Results in the bucket under the prefix; the input removed after processing (keepUploads false).
            let keys = try await server.settledKeys(ofJob: job)
            #expect(
                keys
                    == ["analysis-data.json", "analysis.json", "highlight.mp4", "poster.jpg", "storyboard.png"].map {
                        "tenant-a/jobs/\(job)/\($0)"
                    }, "\(keys)")
            // The worker empties its scratch just after it records the job completed.
            let left = try await server.scratchFoldersLeft()
            #expect(left.isEmpty, "scratch left: \(left)")
            #expect(!FileManager.default.fileExists(atPath: server.service.layout.jobDirectory(job)))

            let stored = try await server.object("tenant-a/jobs/\(job)/highlight.mp4")
            #expect(stored.count > 1000)
            let full = try await client.get("/api/v1/jobs/\(job)/download", key: key)
            #expect(full.status == .ok)
            #expect(full.headers[.contentType] == "video/mp4" && full.headers[.acceptRanges] == "bytes")
            #expect(full.headers[.contentLength] == String(stored.count))
            #expect(full.headers[.eTag] != nil && full.headers[.lastModified] != nil)
            #expect(Data(full.body.readableBytesView) == stored)

            let ranged = try await client.get(
                "/api/v1/jobs/\(job)/download", key: key, headers: [.range: "bytes=100-1099"])
            #expect(ranged.status == .partialContent)
            #expect(ranged.headers[.contentRange] == "bytes 100-1099/\(stored.count)")
            #expect(Data(ranged.body.readableBytesView) == stored[100...1099])
            let suffix = try await client.get("/api/v1/jobs/\(job)/download", key: key, headers: [.range: "bytes=-10"])
            #expect(suffix.status == .partialContent && Data(suffix.body.readableBytesView) == stored.suffix(10))
            // If-Range with another version's validator: the whole file.
            let stale = try await client.get(
                "/api/v1/jobs/\(job)/download", key: key, headers: [.range: "bytes=0-9", .ifRange: "\"other\""])
            #expect(stale.status == .ok && stale.body.readableBytes == stored.count)

            let head = try await client.get("/api/v1/jobs/\(job)/download", key: key, method: .head)
            #expect(
                head.status == .ok && head.headers[.contentLength] == String(stored.count)
                    && head.body.readableBytes == 0)
            let unsatisfiable = try await client.get(
                "/api/v1/jobs/\(job)/download", key: key, headers: [.range: "bytes=\(stored.count)-"])
            try unsatisfiable.expectProblem(.rangeNotSatisfiable, code: "range_not_satisfiable")
            #expect(unsatisfiable.headers[.contentRange] == "bytes */\(stored.count)")

            let poster = try await client.get("/api/v1/jobs/\(job)/poster", key: key)
            #expect(poster.status == .ok && Array(poster.body.readableBytesView.prefix(2)) == [0xFF, 0xD8])
            let analysis = try await client.get("/api/v1/jobs/\(job)/analysis", key: key)
            let analysisJSON = try analysis.json()
            #expect(analysis.status == .ok && (analysisJSON["segments"] as? [Any])?.isEmpty == false)

            let ready = try await client.get("/ready", key: nil)
            #expect(ready.status == .ok, "\(ready.text)")

            let deleted = try await client.get("/api/v1/jobs/\(job)", key: key, method: .delete)
            #expect(deleted.status == .ok)
            #expect(try await server.keys() == [], "objects left after DELETE")
            try await client.get("/api/v1/jobs/\(job)/download", key: key).expectProblem(.gone, code: "media_deleted")
        }
    }

    /// With presignDownloads, a download is a 302 to a URL that a plain GET (no credentials) reads.
    @Test func presignedDownloads() async throws {
        let server = try await S3TestServer {
            $0.mediaStorage.presignDownloads = true; $0.mediaStorage.presignSeconds = 120
        }
        let video = try await Fixtures.data(.short)
        try await server.run { client in
            let (_, key) = try await client.createAccount()
            let (job, status) = try await client.uploadAndWait(video, key: key)
            #expect(status == "completed")
            let redirect = try await client.get("/api/v1/jobs/\(job)/download", key: key)
            #expect(redirect.status == .found)
            let location = try #require(redirect.headers[.location])
            #expect(location.contains("X-Amz-Expires=120"), "\(location)")
            #expect(!location.contains(try S3TestEnvironment.values().secretKey))
            let (presignedStatus, body) = try await MotoAuthentication.withChecksOff {
                let response = try await S3MediaStorage.sharedHTTPClient.execute(
                    HTTPClientRequest(url: location), timeout: .seconds(30))
                return (response.status, try await response.body.collect(upTo: 64 << 20))
            }
            #expect(presignedStatus == .ok)
            #expect(Data(body.readableBytesView) == (try await server.object("jobs/\(job)/highlight.mp4")))
        }
    }

    /// Retention deletes a job's objects; the sweeper deletes objects of jobs that do not exist and
    /// scratch folders of jobs nobody runs.
    @Test func sweeperRemovesExpiredAndOrphanObjects() async throws {
        let clock = TestClock(Date())
        let server = try await S3TestServer(clock: clock)
        let video = try await Fixtures.data(.short)
        try await server.run { client in
            let (_, key) = try await client.createAccount()
            let (job, status) = try await client.uploadAndWait(video, key: key)
            #expect(status == "completed")
            #expect(try await server.settledKeys(ofJob: job).count == 5)
            try await server.storage.client.putObject(
                key: "jobs/no-such-job/highlight.mp4", bytes: Array("orphan".utf8))
            let ghost = server.storage.scratchPath("ghost-job")
            try FileManager.default.createDirectory(atPath: ghost, withIntermediateDirectories: true)

            // Within the grace period and the retention, nothing goes.
            await server.service.sweepNow()
            #expect(try await server.keys().count == 6)

            // Past the plan's retention (7 days for the free plan; the service's clock) and the
            // orphans' grace period (the objects' own times: made 0 here).
            clock.now = clock.now.addingTimeInterval(8 * 24 * 3600)
            await server.service.sweepNow(orphanGraceSeconds: 0)
            #expect(try await server.keys() == [], "objects left after the sweep")
            #expect(server.scratchFolders.isEmpty)
            #expect(try await server.service.database.job(id: job)?.mediaDeletedAt != nil)
            try await client.get("/api/v1/jobs/\(job)/download", key: key).expectProblem(.gone, code: "media_deleted")
        }
    }

    /// A job that fails leaves no scratch folder and no object.
    @Test func failedJobLeavesNothing() async throws {
        let server = try await S3TestServer()
        let video = try await Fixtures.data(.black)
        try await server.run { client in
            let (_, key) = try await client.createAccount()
            let (job, status) = try await client.uploadAndWait(video, key: key)
            #expect(status == "failed")
            let left = try await server.scratchFoldersLeft()
            #expect(left.isEmpty, "scratch left: \(left)")
            // The input object goes with the failure (deleted just after the status is written).
            var keys = try await server.keys(ofJob: job)
            for _ in 0..<50 where !keys.isEmpty {
                try await Task.sleep(for: .milliseconds(100))
                keys = try await server.keys(ofJob: job)
            }
            #expect(keys == [])
        }
    }

    /// A job cancelled while it is processing: its scratch folder and its objects are gone once
    /// DELETE returns.
    @Test func cancelledJobLeavesNothing() async throws {
        let server = try await S3TestServer()
        let video = try await Fixtures.data(.long)
        try await server.run { client in
            let (_, key) = try await client.createAccount()
            let upload = try await client.upload(key: key, file: video, fields: [("target_duration", "5")])
            #expect(upload.status == .ok, "\(upload.text)")
            let job = try #require(try upload.json()["job_id"] as? String)
            _ = try await client.poll(job: job, key: key, timeout: 60) {
                ($0["status"] as? String) == "processing" && ($0["progress"] as? Int ?? 0) > 0
            }
            #expect(server.scratchFolders == [job], "the input is fetched to scratch for the child")
            let cancelled = try await client.get("/api/v1/jobs/\(job)", key: key, method: .delete)
            let cancelledStatus = try cancelled.json()["status"] as? String
            #expect(cancelled.status == .ok && cancelledStatus == "cancelled")
            #expect(server.scratchFolders.isEmpty, "scratch left: \(server.scratchFolders)")
            #expect(try await server.keys(ofJob: job) == [])
        }
    }

    /// An unreachable bucket: uploads get a 503 that names neither endpoint nor bucket, and /ready fails.
    @Test func unreachableStorageIs503() async throws {
        // A loopback port nothing listens on.
        let server = try await S3TestServer(unreachable: true)
        let video = try await Fixtures.data(.tiny)
        try await server.run { client in
            let (_, key) = try await client.createAccount()
            let upload = try await client.upload(key: key, file: video, fields: [("target_duration", "5")])
            try upload.expectProblem(.serviceUnavailable, code: "storage_unavailable")
            #expect(upload.headers[.retryAfter] != nil)
            for secret in ["127.0.0.1:9", server.bucket, "jobs/"] {
                #expect(!upload.text.contains(secret), "the answer reveals \(secret): \(upload.text)")
            }
            // Nothing stays on the local disk either.
            #expect(
                ((try? FileManager.default.contentsOfDirectory(atPath: server.service.layout.uploadsDirectory)) ?? [])
                    .isEmpty)
            #expect(
                try await server.service.jobs.jobs(
                    account: try #require(try await server.service.account(apiKey: key)), limit: 10, offset: 0
                ).total == 0)
        }
        // (The refused upload's connection was closed: /ready is asked of the service directly.)
        let checks = await server.service.readiness.check()
        #expect(checks["storage"]?.ok == false)
        #expect(
            checks["storage"].map { !$0.detail.contains("127.0.0.1") && !$0.detail.contains(server.bucket) } == true)
    }

    /// The PaaS names: STORAGE_BACKEND, STORAGE_S3_* and the AWS_* credentials (from the
    /// environment only); errors name what is missing, never a secret.
    @Test func environmentNames() async throws {
        let reader = try await MomentsConfiguration.reader(
            environment: [
                "STORAGE_BACKEND": "s3", "STORAGE_S3_ENDPOINT": "https://acct.r2.cloudflarestorage.com",
                "STORAGE_S3_REGION": "auto",
                "STORAGE_S3_BUCKET": "media", "STORAGE_S3_PATH_STYLE": "true", "STORAGE_S3_PREFIX": "prod",
                "STORAGE_S3_PRESIGN_DOWNLOADS": "true", "STORAGE_S3_PRESIGN_SECONDS": "600"
            ], file: "/nonexistent/moments.json")
        let settings = ServiceSettings(reader: reader).mediaStorage
        #expect(settings.backendKind == .s3)
        #expect(
            settings.endpoint == "https://acct.r2.cloudflarestorage.com" && settings.region == "auto"
                && settings.bucket == "media")
        #expect(
            settings.pathStyle && settings.prefix == "prod" && settings.presignDownloads
                && settings.presignSeconds == 600)
        #expect(ServiceSettings().mediaStorage.backendKind == .filesystem)

        let environment = [
            "AWS_ACCESS_KEY_ID": "AKIDEXAMPLE", "AWS_SECRET_ACCESS_KEY": "very-secret-key",
            "AWS_SESSION_TOKEN": "session-token"
        ]
        let configuration = try MediaStorageFactory.s3Configuration(settings, environment: environment)
        #expect(configuration.endpoint.absoluteString == "https://acct.r2.cloudflarestorage.com")
        #expect(configuration.region == "auto" && configuration.bucket == "media" && configuration.pathStyle)
        #expect(
            configuration.credentials
                == AWSCredentials(
                    accessKeyId: "AKIDEXAMPLE", secretAccessKey: "very-secret-key", sessionToken: "session-token"))

        for missing in ["AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"] {
            var partial = environment
            partial[missing] = nil
            do {
                _ = try MediaStorageFactory.s3Configuration(settings, environment: partial)
                Issue.record("no error without \(missing)")
            } catch {
                #expect("\(error)".contains(missing))
                #expect(!"\(error)".contains("very-secret-key") && !"\(error)".contains("AKIDEXAMPLE"))
            }
        }
        var noBucket = settings
        noBucket.bucket = ""
        #expect(throws: MediaStorageError.self) {
            try MediaStorageFactory.s3Configuration(noBucket, environment: environment)
        }
        var typo = ServiceSettings()
        typo.mediaStorage.backend = "s4"
        let scratch = Scratch()
        #expect(throws: MediaStorageError.self) {
            try MediaStorageFactory.make(
                settings: typo, layout: StorageLayout(root: scratch.path), logger: Logger(label: "test"))
        }
    }
}
