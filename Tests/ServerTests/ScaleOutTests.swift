import Foundation
#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif
import ObjectStorage
import Testing

/// The production shape, for real: one API process (`moments serve --workers 0`) and two
/// `moments worker` processes sharing a PostgreSQL database and an S3 bucket. One worker is killed
/// with SIGKILL in the middle of a job: its lease runs out, another process's rescuer re-queues
/// the job, the other worker completes it. Every job completes exactly once and is charged once,
/// and nothing is left in the bucket or in scratch that no job owns.
@Suite(
    "Scale out", .serialized,
    .enabled(if: TestEngine.isEmbedded, "starts its own processes on PostgreSQL + S3: run once"))
struct ScaleOutTests {
    @Test func apiAndTwoWorkersSurviveAKilledWorker() async throws {
        let executable = try #require(ProcessHarness.executable, "build the moments executable first (swift build)")
        let cluster = try await Cluster(extra: [
            // A short lease and backoff, so the rescue happens within seconds.
            "JOBS_LEASE_SECONDS": "3", "JOBS_RETRY_BACKOFF_SECONDS": "1"
        ])
        let (client, scratch, port, base) = (cluster.bucket, cluster.scratch, cluster.port, cluster.base)
        defer { Task { try? await client.shutdown() } }
        func environment(_ name: String, _ extra: [String: String] = [:]) -> [String: String] {
            cluster.environment(name, extra)
        }
        let api = try ProcessHarness.start(
            executable, ["serve", "--workers", "0", "--log-level", "warning"],
            environment: environment("api", ["HTTP_PORT": String(port)]))
        defer { if api.isRunning { api.terminate() } }
        try await ProcessHarness.waitUntilUp(base)
        var workers = try (0..<2).map { index in
            try ProcessHarness.start(
                executable, ["worker", "--workers", "1", "--log-level", "warning"],
                environment: environment("worker-\(index)"))
        }
        defer { for worker in workers where worker.isRunning { worker.terminate() } }

        // Four accounts, one job each (the free plan runs one job at a time per account).
        let jobs = try await Self.fourJobs(base)

        // Both workers busy and well into their jobs: kill -9 the first worker.
        let deadline = Date().addingTimeInterval(180)
        try await Self.waitUntilTwoAreWellUnderWay(jobs, base, deadline: deadline)
        kill(workers[0].processIdentifier, SIGKILL)
        await workers[0].exited()

        // Every job completes; the killed worker's job on its second attempt.
        var details: [[String: Any]] = []
        for job in jobs {
            var last: [String: Any] = [:]
            while Date() < deadline.addingTimeInterval(240) {
                last = try await ProcessHarness.request("GET", "\(base)/api/v1/jobs/\(job.id)", key: job.key)
                if let s = last["status"] as? String, s == "completed" || s == "failed" { break }
                try await Task.sleep(for: .milliseconds(250))
            }
            #expect(last["status"] as? String == "completed", "\(last)")
            details.append(last)
            // Charged once, whatever the attempts.
            let usage =
                try await ProcessHarness.request("GET", "\(base)/api/v1/account", key: job.key)["usage"]
                as? [String: Any]
            #expect(usage?["used"] as? Int == 1, "\(usage ?? [:])")
            let (data, response) = try await URLSession.shared.data(
                for: ProcessHarness.authorized("GET", "\(base)/api/v1/jobs/\(job.id)/download", key: job.key))
            #expect((response as? HTTPURLResponse)?.statusCode == 200 && data.count > 10_000)
        }
        let attempts = details.compactMap { $0["attempts"] as? Int }
        #expect(attempts.sorted() == [1, 1, 1, 2], "one job was started twice (the killed worker's): \(attempts)")

        // The killed worker comes back (as a supervisor restarts it): it clears what it left in scratch.
        workers[0] = try ProcessHarness.start(
            executable, ["worker", "--workers", "1", "--log-level", "warning"],
            environment: environment("worker-0"))
        for index in 0..<2 {
            let leftovers = {
                (try? FileManager.default.contentsOfDirectory(atPath: scratch.path("worker-\(index)/scratch"))) ?? []
            }
            #expect(await eventually(within: 20) { leftovers().isEmpty }, "scratch of worker \(index): \(leftovers())")
        }
        // The bucket holds the results of these jobs and their inputs (kept for re-cuts), nothing else.
        let keys = Set(try await client.listObjects().map(\.key))
        let files = ["highlight.mp4", "poster.jpg", "analysis.json", "analysis-data.json", "storyboard.png", "input"]
        let expected = Set(jobs.flatMap { job in files.map { "jobs/\(job.id)/\($0)" } })
        #expect(
            keys == expected,
            "unexpected objects: \(keys.subtracting(expected)); missing: \(expected.subtracting(keys))")

        // SIGTERM: clean stops.
        for process in workers + [api] {
            process.terminate()
            await process.exited()
            #expect(process.terminationReason == .exit)
        }
    }

    /// Four new accounts upload a video each: the first two (claimed first, and the ones a worker
    /// is killed in) long enough to be caught mid-job, the last two short (the surviving worker runs
    /// them and the rescued job one after another: short ones keep this suite off the tier's tail).
    static func fourJobs(_ base: String) async throws -> [(id: String, key: String)] {
        let long = try await Fixtures.data(.long), short = try await Fixtures.data(.short)
        var jobs: [(id: String, key: String)] = []
        for video in [long, long, short, short] {
            let key = try #require(
                try await ProcessHarness.request("POST", "\(base)/api/v1/accounts")["api_key"] as? String)
            let accepted = try await ProcessHarness.upload(video, to: "\(base)/api/v1/upload", key: key)
            jobs.append((try #require(accepted["job_id"] as? String, "\(accepted)"), key))
        }
        return jobs
    }

    /// Waits (up to `deadline`) until two of `jobs` are processing and at least 10 % done.
    static func waitUntilTwoAreWellUnderWay(_ jobs: [(id: String, key: String)], _ base: String, deadline: Date)
        async throws
    {
        while Date() < deadline {
            var busy = 0
            for job in jobs {
                let status = try await ProcessHarness.request(
                    "GET", "\(base)/api/v1/jobs/\(job.id)/status", key: job.key)
                if status["status"] as? String == "processing", (status["progress"] as? Int ?? 0) >= 10 { busy += 1 }
            }
            if busy >= 2 { break }
            try await Task.sleep(for: .milliseconds(100))
        }
    }

    /// Two API processes on one PostgreSQL database, one free account (3 highlights a month; jobs
    /// at once raised so that the month's quota is the limit), 20 uploads racing through both:
    /// exactly 3 are accepted, the rest get 402, and the account is charged 3.
    @Test func quotaHoldsAcrossAPIProcesses() async throws {
        let executable = try #require(ProcessHarness.executable, "build the moments executable first (swift build)")
        let databaseURL = try await TestServers.freshDatabase()
        let scratch = Scratch()
        let ports = try [freePort(), freePort()]
        var apis: [Process] = []
        defer { for api in apis where api.isRunning { api.terminate() } }
        for (index, port) in ports.enumerated() {
            apis.append(
                try ProcessHarness.start(
                    executable, ["serve", "--workers", "0", "--log-level", "warning"],
                    environment: [
                        "DATABASE_URL": databaseURL, "HTTP_PORT": String(port),
                        "STORAGE_PATH": scratch.path("api-\(index)"),
                        "STORAGE_MIN_FREE_BYTES": "1048576", "PLANS_FREE_CONCURRENT_JOBS": "100",
                        "UPLOAD_MAX_CONCURRENT": "0"
                    ]))
        }
        for port in ports { try await ProcessHarness.waitUntilUp("http://127.0.0.1:\(port)") }
        let key = try #require(
            try await ProcessHarness.request("POST", "http://127.0.0.1:\(ports[0])/api/v1/accounts")["api_key"]
                as? String)
        let video = try await Fixtures.data(.tiny)
        let outcomes = try await withThrowingTaskGroup(of: String.self) { group in
            for attempt in 0..<20 {
                group.addTask {
                    let answer = try await ProcessHarness.upload(
                        video, to: "http://127.0.0.1:\(ports[attempt % 2])/api/v1/upload", key: key)
                    if answer["job_id"] is String { return "accepted" }
                    // A problem's type URI ends with its code.
                    return (answer["type"] as? String).flatMap { $0.split(separator: "/").last.map(String.init) }
                        ?? "\(answer)"
                }
            }
            return try await group.reduce(into: [String]()) { $0.append($1) }
        }
        #expect(outcomes.filter { $0 == "accepted" }.count == 3, "\(outcomes)")
        #expect(outcomes.filter { $0 == "quota_exceeded" }.count == 17, "\(outcomes)")
        for port in ports {
            let usage =
                try await ProcessHarness.request("GET", "http://127.0.0.1:\(port)/api/v1/account", key: key)["usage"]
                as? [String: Any]
            #expect(usage?["used"] as? Int == 3, "\(usage ?? [:])")
        }
    }

    /// A DELETE on the API process reaches the worker process running the job through NOTIFY: the
    /// worker stops its child and removes its scratch within moments, and nothing is charged.
    @Test func cancelReachesTheWorkerOnAnotherProcess() async throws {
        let executable = try #require(ProcessHarness.executable, "build the moments executable first (swift build)")
        let cluster = try await Cluster()
        let (client, scratch, base) = (cluster.bucket, cluster.scratch, cluster.base)
        defer { Task { try? await client.shutdown() } }
        let api = try ProcessHarness.start(
            executable, ["serve", "--workers", "0", "--log-level", "warning"],
            environment: cluster.environment("api", ["HTTP_PORT": String(cluster.port)]))
        defer { if api.isRunning { api.terminate() } }
        let worker = try ProcessHarness.start(
            executable, ["worker", "--workers", "1", "--log-level", "warning"],
            environment: cluster.environment("worker"))
        defer { if worker.isRunning { worker.terminate() } }
        try await ProcessHarness.waitUntilUp(base)
        let key = try #require(
            try await ProcessHarness.request("POST", "\(base)/api/v1/accounts")["api_key"] as? String)
        let accepted = try await ProcessHarness.upload(
            try await Fixtures.data(.long), to: "\(base)/api/v1/upload", key: key)
        let job = try #require(accepted["job_id"] as? String, "\(accepted)")
        let deadline = Date().addingTimeInterval(120)
        while Date() < deadline {
            let status = try await ProcessHarness.request("GET", "\(base)/api/v1/jobs/\(job)/status", key: key)
            if status["status"] as? String == "processing", (status["progress"] as? Int ?? 0) >= 10 { break }
            try await Task.sleep(for: .milliseconds(50))
        }
        let workspace = scratch.path("worker/scratch/\(job)")
        #expect(FileManager.default.fileExists(atPath: workspace), "the worker works on the job in its scratch")
        let cancelled = try await ProcessHarness.request("DELETE", "\(base)/api/v1/jobs/\(job)", key: key)
        #expect(cancelled["status"] as? String == "cancelled", "\(cancelled)")
        let asked = Date()
        while FileManager.default.fileExists(atPath: workspace), Date().timeIntervalSince(asked) < 10 {
            try await Task.sleep(for: .milliseconds(20))
        }
        let took = Date().timeIntervalSince(asked)
        #expect(!FileManager.default.fileExists(atPath: workspace), "the worker did not stop")
        // NOTIFY, SIGTERM to the child, clean-up: well within the lease renewal (10 s) it would otherwise take.
        #expect(took < 3, "the worker took \(took) s to stop")
        let usage =
            try await ProcessHarness.request("GET", "\(base)/api/v1/account", key: key)["usage"] as? [String: Any]
        #expect(usage?["used"] as? Int == 0, "\(usage ?? [:])")
        #expect(try await client.listObjects().filter { $0.key.contains(job) }.isEmpty)
    }
}

/// What the process tests share: a fresh database, a fresh bucket (and a client on it), a folder
/// per process, the API's port, and the environment that points a process at all of them.
struct Cluster {
    let databaseURL: String
    let bucket: S3Client
    let scratch = Scratch()
    let port: Int
    let shared: [String: String]

    var base: String { "http://127.0.0.1:\(port)" }

    init(extra: [String: String] = [:]) async throws {
        databaseURL = try await TestServers.freshDatabase()
        let s3 = try TestServers.s3
        let name = "cluster-\(UUID().uuidString.prefix(8).lowercased())"
        bucket = S3Client(
            configuration: S3Configuration(
                endpoint: URL(string: s3.endpoint)!, region: "us-east-1", bucket: name, pathStyle: true,
                credentials: AWSCredentials(accessKeyId: s3.accessKey, secretAccessKey: s3.secretKey)))
        try await bucket.createBucket()
        port = try freePort()
        shared = [
            "DATABASE_URL": databaseURL,
            // One server secret for the cluster, as production sets it: a media link signed by one
            // API process opens on another, a webhook secret sealed by one is opened by any.
            "SECURITY_SERVER_SECRET": "cluster-secret-\(UUID().uuidString)",
            "STORAGE_BACKEND": "s3", "STORAGE_S3_ENDPOINT": s3.endpoint, "STORAGE_S3_REGION": "us-east-1",
            "STORAGE_S3_BUCKET": name, "STORAGE_S3_PATH_STYLE": "true",
            "AWS_ACCESS_KEY_ID": s3.accessKey, "AWS_SECRET_ACCESS_KEY": s3.secretKey,
            "JOBS_PROGRESS_INTERVAL_MS": "50", "STORAGE_MIN_FREE_BYTES": "1048576", "METRICS_WORKER_PORT": "0"
        ].merging(extra) { $1 }
    }

    /// The environment of the process named `name` (its own storage folder).
    func environment(_ name: String, _ extra: [String: String] = [:]) -> [String: String] {
        shared.merging(["STORAGE_PATH": scratch.path(name)].merging(extra) { $1 }) { $1 }
    }
}
