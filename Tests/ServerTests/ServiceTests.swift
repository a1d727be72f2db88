import Synchronization
import ServiceLifecycle
import Highlight
import Foundation
import MediaVocabulary
import HTTPTypes
import HummingbirdTesting
import JobMedia
import Logging
import MomentsConfig
@testable import moments
import NIOCore
import SQLiteStore
import Store
import Testing

@Suite("Service pieces")
struct ServiceTests {
    /// /openapi.json lists exactly the routes the router has.
    @Test func openAPIMatchesRoutes() async throws {
        let server = try await TestServer()
        let registered = Set(server.routes.routes.map { "\($0.method) \($0.path)" })
        try await withServer(server, .router) { client in
            let response = try await client.get("/openapi.json", key: nil)
            #expect(response.status == .ok)
            let document = try response.json()
            #expect((document["openapi"] as? String)?.hasPrefix("3.1") == true)
            let paths = try #require(document["paths"] as? [String: [String: Any]])
            let methods: Set<String> = ["get", "put", "post", "delete", "head", "patch", "options"]
            let documented = Set(
                paths.flatMap { path, operations in operations.keys.filter(methods.contains).map { "\($0) \(path)" } })
            #expect(
                documented == registered,
                "only documented: \(documented.subtracting(registered)); only routed: \(registered.subtracting(documented))"
            )
        }
    }

    @Test func formatsComeFromFFmpeg() async throws {
        let server = try await TestServer()
        try await withServer(server, .router) { client in
            let formats = try await client.get("/api/v1/upload/formats", key: nil).json()
            let containers = (formats["containers"] as? [[String: Any]] ?? []).compactMap { $0["name"] as? String }
            let video = (formats["video_codecs"] as? [[String: Any]] ?? []).compactMap { $0["name"] as? String }
            #expect(containers.contains("mov,mp4,m4a,3gp,3g2,mj2") && containers.contains("matroska,webm"))
            #expect(video.contains("h264") && video.contains("hevc"))
            #expect(((formats["audio_codecs"] as? [[String: Any]])?.count ?? 0) > 10)
            #expect(
                (formats["limits"] as? [String: Any])?["max_bytes"] as? Int
                    == Int(server.service.settings.maxUploadBytes))
            #expect((formats["target_duration"] as? [String: Any])?["min"] as? Int == 5)
            #expect(formats["qualities"] as? [String] == ["low", "medium", "high", "original"])
        }
    }

    /// With an API key, the formats' limits are the caller's plan's (within the server's); a bad
    /// key is refused as anywhere else.
    @Test func formatsWithAKeyAreInThePlansLimits() async throws {
        var plans = TestServer.roomyPlans
        plans.free.maxUploadBytes = 50_000_000
        plans.free.maxDurationSeconds = 120
        let server = try await TestServer(plans: plans)
        try await withServer(server, .router) { client in
            let (_, key) = try await client.createAccount()
            let limits = try await client.get("/api/v1/upload/formats", key: key).json()["limits"] as? [String: Any]
            #expect(limits?["max_bytes"] as? Int == 50_000_000 && limits?["max_duration_seconds"] as? Double == 120)
            let bad = try await client.get("/api/v1/upload/formats", key: "mk_not_a_key")
            #expect(bad.status == .unauthorized)
        }
    }

    @Test func healthAndReady() async throws {
        let server = try await TestServer()
        try await withServer(server, .router) { client in
            #expect(try await client.get("/health", key: nil).json()["status"] as? String == "ok")
            let ready = try await client.get("/ready", key: nil)
            #expect(ready.status == .ok)
            // Readiness says no more than that: its checks go to the log (see TransportLimitTests).
            #expect(try ready.json().keys.sorted() == ["status"] && ready.json()["status"] as? String == "ready")
        }
    }

    /// One server per storage folder: a second one refuses to start.
    @Test(.enabled(if: TestEngine.isEmbedded, "the storage lock guards the embedded SQLite only"))
    func storageIsLocked() async throws {
        let server = try await TestServer()
        var settings = server.service.settings
        settings.port = 0
        #expect(throws: StorageLockError.self) {
            _ = try makeServices(settings: settings, media: MediaDefaults(), logger: Logger(label: "second"))
        }
    }

    /// The start-up work is the group's first service: a second process on a locked storage stops
    /// there, with the lock's error, and what waits for it (the app, the workers) never starts.
    @Test(.enabled(if: TestEngine.isEmbedded, "the storage lock guards the embedded SQLite only"))
    func aSecondProcessStopsAtItsStartUp() async throws {
        let server = try await TestServer()
        let settings = server.service.settings
        let second = try MomentsServices(
            settings: settings, media: MediaDefaults(),
            store: try AppDatabase(path: server.layout.databasePath), logger: Logger(label: "second"))
        let started = StartedFlag()
        let group = ServiceGroup(
            services: [second.startup, second.startup.then(started)], logger: Logger(label: "second"))
        do {
            try await group.run()
            Issue.record("the second process's group ran")
        } catch {
            #expect(error is StorageLockError, "\(error)")
        }
        #expect(!started.value, "a service after the start-up work started")
    }

    /// The start-up work done, the services after it start; stopped, they stop, then it does.
    @Test func servicesAfterTheStartUpRunOnceItIsDone() async throws {
        let scratch = Scratch()
        var settings = ServiceSettings()
        settings.storagePath = scratch.path("storage")
        settings.workers = 0
        let services = try makeServices(settings: settings, media: MediaDefaults(), logger: Logger(label: "t"))
        let started = StartedFlag()
        let group = ServiceGroup(
            services: [services.startup, services.startup.then(started)], logger: Logger(label: "t"))
        try await withThrowingTaskGroup(of: Void.self) { tasks in
            tasks.addTask { try await group.run() }
            #expect(await eventually(within: 30) { started.value })
            await group.triggerGracefulShutdown()
            try await tasks.waitForAll()
        }
        #expect(FileManager.default.fileExists(atPath: services.layout.jobsDirectory))
    }

    /// The API key is stored only as a hash.
    @Test func apiKeysAreHashed() async throws {
        let server = try await TestServer()
        let (account, key) = try await server.service.createAccount(label: "test")
        let stored = try #require(try await server.service.database.keys(accountId: account.id).first)
        #expect(stored.hash != key && stored.hash.count == 64 && !stored.hash.contains(key))
        #expect(try await server.service.account(apiKey: key)?.id == account.id)
    }

    /// Jobs left processing by a crash are re-queued with their attempt counted, and fail with a
    /// clear message once they have been started the maximum number of times.
    @Test(
        .enabled(
            if: TestEngine.isEmbedded,
            "start-up recovery of a store the process has to itself (SQLite); on PostgreSQL, leases: see StoreTests and ScaleOutTests"
        )) func recoveryAfterCrashCountsAttempts() async throws
    {
        let server = try await TestServer()
        let db = server.service.database
        let (account, _) = try await server.service.createAccount(label: nil)
        let input = JobInput(
            size: 1, duration: 10, container: "mp4", videoCodec: "h264", audioCodec: nil, width: 320, height: 180,
            rotation: 0, frameRate: 30)
        try await db.insertUnmetered(
            Job(
                id: "a", accountId: account.id, targetDuration: 10, quality: .high, input: input, estimatedSeconds: 5,
                now: Date()))
        for attempt in 1...3 {
            let claimed = try #require(try await db.claimNextJob(worker: "test", leaseSeconds: 30, now: Date()))
            #expect(claimed.attempts == attempt)
            let recovered = try (db as! AppDatabase).recoverInterruptedJobs(maxAttempts: 3, now: Date())
            if attempt < 3 {
                #expect(recovered.requeued == ["a"])
            } else {
                #expect(recovered.failed == ["a"])
            }
        }
        let job = try #require(try await db.job(id: "a"))
        #expect(job.status == .failed && job.errorCode == "interrupted")
        #expect(job.errorMessage?.contains("interrupted 3 times") == true)
    }

    /// Two workers never get the same job.
    @Test func claimsAreAtomic() async throws {
        let server = try await TestServer()
        let db = server.service.database
        let (account, _) = try await server.service.createAccount(label: nil)
        let input = JobInput(
            size: 1, duration: 10, container: "mp4", videoCodec: "h264", audioCodec: nil, width: 320, height: 180,
            rotation: 0, frameRate: 30)
        for i in 0..<40 {
            try await db.insertUnmetered(
                Job(
                    id: "job\(i)", accountId: account.id, targetDuration: 10, quality: .high, input: input,
                    estimatedSeconds: 5, now: Date()))
        }
        let claimed = try await withThrowingTaskGroup(of: [String].self) { group in
            for _ in 0..<8 {
                group.addTask {
                    var mine: [String] = []
                    while let job = try await db.claimNextJob(worker: "test", leaseSeconds: 30, now: Date()) {
                        mine.append(job.id)
                    }
                    return mine
                }
            }
            return try await group.reduce(into: [String]()) { $0 += $1 }
        }
        #expect(claimed.count == 40 && Set(claimed).count == 40)
    }

    /// The sweeper deletes results past retention and folders and uploads belonging to nothing.
    @Test(.enabled(if: TestEngine.isEmbedded, "lays out job folders by hand; the bucket's sweep: S3StorageTests"))
    func sweeperRemovesExpiredAndOrphans() async throws {
        let server = try await TestServer { $0.resultRetentionHours = 1 }
        let db = server.service.database
        let layout = server.layout
        let (account, _) = try await server.service.createAccount(label: nil)
        let input = JobInput(
            size: 1, duration: 10, container: "mp4", videoCodec: "h264", audioCodec: nil, width: 320, height: 180,
            rotation: 0, frameRate: 30)
        let old = Date().addingTimeInterval(-7200)
        try await db.insertUnmetered(
            Job(
                id: "old", accountId: account.id, targetDuration: 10, quality: .high, input: input,
                estimatedSeconds: 5, now: old))
        _ = try await db.claimNextJob(worker: "test", leaseSeconds: 30, now: old)
        _ = try await db.complete(
            id: "old", worker: "test", output: JobOutput(duration: 1, size: 1, width: 1, height: 1), segments: [],
            processingSeconds: 1, workerSeconds: 0, now: old)
        try FileManager.default.createDirectory(atPath: layout.jobDirectory("old"), withIntermediateDirectories: true)
        FileManager.default.createFile(atPath: layout.resultPath("old"), contents: Data("x".utf8))
        let orphan = layout.jobDirectory("orphan")
        try FileManager.default.createDirectory(atPath: orphan, withIntermediateDirectories: true)
        let partial = layout.uploadsDirectory + "/dropped.partial"
        FileManager.default.createFile(atPath: partial, contents: Data("x".utf8))
        for path in [orphan, partial] {
            try FileManager.default.setAttributes([.modificationDate: old], ofItemAtPath: path)
        }
        await server.service.sweepNow()
        #expect(!FileManager.default.fileExists(atPath: layout.jobDirectory("old")))
        #expect(!FileManager.default.fileExists(atPath: orphan))
        #expect(!FileManager.default.fileExists(atPath: partial))
        #expect(try await db.job(id: "old")?.mediaDeletedAt != nil)
    }

    /// Files' ages are wall-clock ages: with the service's clock days ahead (a month-end test), an
    /// upload being received and a job folder waiting for its row are not taken for abandoned ones.
    @Test(.enabled(if: TestEngine.isEmbedded, "lays out job folders by hand")) func sweepOnAMovedClockKeepsFreshFiles()
        async throws
    {
        let clock = TestClock(Date().addingTimeInterval(6 * 24 * 3600))
        let server = try await TestServer(clock: clock)
        let layout = server.layout
        let receiving = layout.uploadsDirectory + "/receiving.partial"
        FileManager.default.createFile(atPath: receiving, contents: Data("x".utf8))
        let waiting = layout.jobDirectory("row-not-yet-written")
        try FileManager.default.createDirectory(atPath: waiting, withIntermediateDirectories: true)
        FileManager.default.createFile(atPath: waiting + "/input", contents: Data("x".utf8))
        await server.service.sweepNow()
        #expect(FileManager.default.fileExists(atPath: receiving))
        #expect(FileManager.default.fileExists(atPath: waiting + "/input"))
    }

    /// Config/ gives defaults; environment variables override every key.
    @Test func configurationLayers() async throws {
        let scratch = Scratch()
        let file = scratch.path("moments.json")
        try Data(
            #"{"http": {"port": 9100, "host": "0.0.0.0"}, "jobs": {"workers": 3}, "upload": {"maxBytes": 1000}}"#.utf8
        )
        .write(to: URL(fileURLWithPath: file))
        let reader = try await MomentsConfiguration.reader(
            environment: [
                "HTTP_PORT": "9200", "STORAGE_PATH": "/srv/moments",
                "STORAGE_MIN_FREE_BYTES": "5", "HTTP_PUBLIC_BASE_URL": "https://api.example.com/"
            ],
            file: file)
        let settings = ServiceSettings(reader: reader)
        #expect(settings.port == 9200 && settings.host == "0.0.0.0")
        #expect(settings.workers == 3 && settings.maxUploadBytes == 1000)
        #expect(settings.storagePath == "/srv/moments" && settings.minFreeBytes == 5)
        #expect(settings.baseURL == "https://api.example.com")
        // The scale-out keys, by the names PaaS hosts use.
        let scaled = ServiceSettings(
            reader: try await MomentsConfiguration.reader(
                environment: [
                    "DATABASE_URL": "postgres://moments:secret@db:5432/moments?sslmode=require", "JOBS_WORKERS": "0",
                    "JOBS_LEASE_SECONDS": "12"
                ], file: file))
        #expect(scaled.workers == 0 && scaled.leaseSeconds == 12)
        let location = StoreLocation(scaled.databaseURL, storagePath: scaled.storagePath)
        #expect(location == .postgresql(url: "postgres://moments:secret@db:5432/moments?sslmode=require"))
        #expect(!location.redacted.contains("secret"), "\(location.redacted)")
        #expect(StoreLocation("", storagePath: "/srv/m") == .sqlite(path: "/srv/m/moments.sqlite"))
        #expect(StoreLocation("sqlite:/data/m.db", storagePath: "x") == .sqlite(path: "/data/m.db"))
        #expect(StoreLocation("/data/m.db", storagePath: "x") == .sqlite(path: "/data/m.db"))
        // That the shipped Config/moments.json holds the built-in defaults: ShippedConfigTests.
        // plans.free.recuts by its environment name.
        let noRecuts = PlanSettings(
            reader: try await MomentsConfiguration.reader(
                environment: ["PLANS_FREE_RECUTS": "false"], file: "Config/moments.json"))
        #expect(!noRecuts.free.recuts && noRecuts.pro.recuts)
        // Jump cuts: off as shipped, on by media.analysis.jumpCuts.
        let shippedMedia = MediaDefaults(
            reader: try await MomentsConfiguration.reader(environment: [:], file: "Config/moments.json"))
        #expect(!shippedMedia.template.analysis.shots.jumpCuts)
        let jumps = MediaDefaults(
            reader: try await MomentsConfiguration.reader(
                environment: ["MEDIA_ANALYSIS_JUMP_CUTS": "true"], file: "Config/moments.json"))
        #expect(jumps.template.analysis.shots.jumpCuts)
        await #expect(throws: (any Error).self) {
            try Data("{not json".utf8).write(to: URL(fileURLWithPath: file))
            _ = try await MomentsConfiguration.reader(environment: [:], file: file)
        }
    }
}

/// `Expect: 100-continue` (curl sends it for bodies over 1 MB): answered once the key, quota and
/// size checks pass, or, when the declared length is over the limit, answered with the 413 before
/// any body is sent (refusals never get 100 Continue: see TransportLimitTests).
@Suite("Expect: 100-continue")
struct ExpectContinueTests {
    @Test func continueOrRefuseBeforeTheBody() async throws {
        let server = try await TestServer { $0.maxUploadBytes = 1_000_000 }
        try await withServer(server, .live) { client in
            let (_, key) = try await client.createAccount()
            let port = try #require(client.port)
            let small = try await RawConnection.offPool {
                try Self.exchangeHead(port: port, key: key, contentLength: 500_000)
            }
            #expect(small.hasPrefix("HTTP/1.1 100 Continue"), "\(small)")
            let large = try await RawConnection.offPool {
                try Self.exchangeHead(port: port, key: key, contentLength: 5_000_000)
            }
            #expect(large.hasPrefix("HTTP/1.1 413"), "\(large)")
        }
    }

    /// Sends only the request head and returns the first bytes the server answers with.
    private static func exchangeHead(port: Int, key: String, contentLength: Int) throws -> String {
        let connection = try RawConnection(port: port)
        defer { connection.close() }
        connection.send(
            "POST /api/v1/upload HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer \(key)\r\n"
                + "Content-Type: \(Multipart.contentType)\r\nContent-Length: \(contentLength)\r\nExpect: 100-continue\r\n\r\n"
        )
        guard case .data(let bytes) = connection.read(timeout: 30) else { return "" }
        return String(decoding: bytes, as: UTF8.self)
    }
}

/// A service that notes that it started, then waits for the group to stop.
final class StartedFlag: Service, Sendable {
    private let flag = Atomic<Bool>(false)
    var value: Bool { flag.load(ordering: .relaxed) }

    func run() async throws {
        flag.store(true, ordering: .relaxed)
        try? await gracefulShutdown()
    }
}
