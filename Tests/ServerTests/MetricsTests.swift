import Highlight
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Logging
import MomentsConfig
@testable import moments
import HTTPEdge
import MomentsServer
import NIOCore
import Store
import Synchronization
import Telemetry
import Testing
import Workers

/// Log lines kept in memory.
final class MemoryLogSink: LogLineSink {
    private let lines = Mutex<[String]>([])
    func write(_ line: [UInt8]) { lines.withLock { $0.append(String(decoding: line, as: UTF8.self)) } }
    var all: [String] { lines.withLock { $0 } }
    /// Each line parsed as a JSON object.
    func objects() throws -> [[String: Any]] {
        try all.map { line in
            try #require(line.hasSuffix("\n") && !line.dropLast().contains("\n"), "not one line: \(line)")
            return try #require(
                try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any], "not a JSON object: \(line)")
        }
    }
}

/// The Prometheus text format, read back: `name{label="value",...} number` lines.
struct Exposition {
    struct Sample { var name: String; var labels: [String: String]; var value: Double }
    let text: String
    let samples: [Sample]

    init(_ text: String) {
        self.text = text
        samples = text.split(separator: "\n").compactMap { line -> Sample? in
            guard !line.hasPrefix("#"), let space = line.lastIndex(of: " "),
                let value = Double(line[line.index(after: space)...])
            else { return nil }
            let series = line[..<space]
            guard let brace = series.firstIndex(of: "{") else {
                return Sample(name: String(series), labels: [:], value: value)
            }
            var labels: [String: String] = [:]
            let body = series[series.index(after: brace)..<series.index(before: series.endIndex)]
            for pair in body.split(separator: ",") {
                let parts = pair.split(separator: "=", maxSplits: 1)
                if parts.count == 2 { labels[String(parts[0])] = String(parts[1].dropFirst().dropLast()) }
            }
            return Sample(name: String(series[..<brace]), labels: labels, value: value)
        }
    }

    /// The sum of the samples named `name` whose labels include `labels` (nil when there is none).
    func value(_ name: String, _ labels: [String: String] = [:]) -> Double? {
        let matching = samples.filter { sample in
            sample.name == name && labels.allSatisfy { key, value in sample.labels[key] == value }
        }
        return matching.isEmpty ? nil : matching.reduce(0) { $0 + $1.value }
    }
}

extension TestClientProtocol {
    func metrics(token: String? = nil) async throws -> (TestResponse, Exposition) {
        let response = try await get("/metrics", key: token)
        return (response, Exposition(response.text))
    }
}

@Suite("Metrics and JSON logs", .serialized)
struct MetricsTests {
    /// A service whose log lines are JSON objects kept in `sink`.
    static func jsonLoggedService(
        _ scratch: Scratch, plans: PlanSettings, sink: MemoryLogSink,
        _ configure: (inout ServiceSettings) -> Void = { _ in }
    ) async throws -> MomentsServices {
        var settings = ServiceSettings()
        settings.storagePath = scratch.path("storage")
        settings.port = 0
        settings.minFreeBytes = 1 << 20
        settings.progressIntervalMs = 50
        configure(&settings)
        var logger = Logger(label: "moments-test") { JSONLogHandler(label: $0, sink: sink) }
        logger.logLevel = .info
        var appStore = AppStoreSettings()
        appStore.rootCertificates = [scratch.path("apple-root.cer")]
        let engines = try await TestEngine.current.open(settings: &settings, sandboxForAll: false, logger: logger)
        return try makeServices(
            settings: settings, media: MediaDefaults(), plans: plans, appStore: appStore, store: engines.store,
            mediaStorage: engines.media, logger: logger)
    }

    /// An upload, status polls until the job is done, a refused upload: /metrics counts each by route
    /// pattern (never a job id), the bytes received, the refusal, the queue and the finished job;
    /// the worker's log lines carry the job's id.
    @Test func uploadPollAndRefusalAreCounted() async throws {
        let scratch = Scratch()
        let sink = MemoryLogSink()
        var plans = TestServer.roomyPlans
        plans.free.monthlyHighlights = 1
        let service = try await Self.jsonLoggedService(scratch, plans: plans, sink: sink)
        let (app, _) = buildApplication(
            service, logger: Logger(label: "moments-test") { JSONLogHandler(label: $0, sink: sink) },
            background: service.background)
        let video = try await Fixtures.data(.tiny)
        try await app.test(.router) { client in
            let (_, before) = try await client.metrics()
            let (accountId, key) = try await client.createAccount()
            let accepted = try await client.upload(key: key, file: video, fields: [("target_duration", "5")])
            #expect(accepted.status == .ok, "\(accepted.text)")
            let jobId = try #require(try accepted.json()["job_id"] as? String)
            let seen = try await client.poll(job: jobId, key: key) {
                ["completed", "failed"].contains($0["status"] as? String ?? "")
            }
            #expect(seen.last?["status"] as? String == "completed", "\(seen.last ?? [:])")
            let refused = try await client.upload(key: key, file: video, fields: [("target_duration", "5")])
            try refused.expectProblem(HTTPResponse.Status(code: 402), code: "quota_exceeded")

            let (response, after) = try await client.metrics()
            #expect(response.status == .ok)
            #expect(response.headers[.contentType] == "text/plain; version=0.0.4; charset=utf-8")
            // HTTP: the route pattern, method and status; no id of any job, account or key.
            let polls =
                after.value(
                    "moments_http_requests_total",
                    ["route": "/api/v1/jobs/{id}/status", "method": "GET", "status": "200"]) ?? 0
            #expect(polls >= Double(seen.count), "\(after.text)")
            #expect(
                (after.value(
                    "moments_http_requests_total", ["route": "/api/v1/upload", "method": "POST", "status": "200"]) ?? 0)
                    >= 1)
            #expect(
                (after.value(
                    "moments_http_requests_total", ["route": "/api/v1/upload", "method": "POST", "status": "402"]) ?? 0)
                    >= 1)
            #expect(
                (after.value("moments_http_request_duration_seconds_count", ["route": "/api/v1/jobs/{id}/status"]) ?? 0)
                    >= Double(seen.count))
            for secret in [jobId, accountId, key] { #expect(!after.text.contains(secret), "/metrics shows \(secret)") }
            #expect(!after.text.contains("/api/v1/jobs/" + jobId.prefix(8)))
            // Uploads: the bytes, the accepted one, the refused one with its code.
            let bytes = try #require(after.value("moments_upload_received_bytes_total"))
            #expect(bytes - (before.value("moments_upload_received_bytes_total") ?? 0) >= Double(video.count))
            #expect((after.value("moments_uploads_total", ["result": "accepted"]) ?? 0) >= 1)
            #expect((after.value("moments_uploads_total", ["result": "refused", "code": "quota_exceeded"]) ?? 0) >= 1)
            #expect(after.value("moments_uploads_in_flight") != nil)
            // Quota refusals by code.
            let refusals = after.value("moments_quota_refusals_total", ["code": "quota_exceeded"]) ?? 0
            #expect(refusals - (before.value("moments_quota_refusals_total", ["code": "quota_exceeded"]) ?? 0) >= 1)
            #expect(after.value("moments_quota_refusals_total", ["code": "daily_budget_exceeded"]) != nil)
            // Queue, jobs, workers.
            #expect(after.value("moments_queue_jobs", ["state": "pending"]) != nil)
            #expect(after.value("moments_queue_jobs", ["state": "processing"]) != nil)
            #expect(after.value("moments_queue_oldest_pending_age_seconds") != nil)
            #expect((after.value("moments_jobs_finished_total", ["outcome": "completed"]) ?? 0) >= 1)
            #expect(after.value("moments_jobs_finished_total", ["outcome": "handed_back"]) != nil)
            for stage in ["analysis", "render", "publish", "total"] {
                #expect(
                    (after.value("moments_job_stage_duration_seconds_count", ["stage": stage]) ?? 0) >= 1,
                    "stage \(stage)")
            }
            #expect((after.value("moments_job_attempts_count") ?? 0) >= 1)
            #expect((after.value("moments_workers") ?? 0) >= 1)
            #expect(after.value("moments_workers_busy_ratio") != nil)
        }
        // The worker's lines carry the job's id.
        let lines = try sink.objects()
        let jobLines = lines.filter { ($0["message"] as? String)?.hasPrefix("job ") == true }
        #expect(
            jobLines.contains { $0["message"] as? String == "job started" && ($0["job"] as? String)?.count == 36 },
            "\(sink.all)")
        #expect(jobLines.allSatisfy { $0["job"] is String && $0["label"] as? String == "moments-test" })
    }

    /// The queue gauges follow the store: a job waiting is counted as pending with its age.
    @Test func queueSamplerRecordsTheStoreQueue() async throws {
        let sampler = QueueSampler(minInterval: 0) { _ in
            QueueStatistics(pending: 7, processing: 2, oldestPendingSeconds: 42.5)
        }
        await sampler.refresh()
        let exposition = Exposition(String(decoding: MetricsExporter.exposition(), as: UTF8.self))
        // The suite runs serialized, and only its tests sample a queue.
        #expect(exposition.value("moments_queue_jobs", ["state": "pending"]) == 7)
        #expect(exposition.value("moments_queue_jobs", ["state": "processing"]) == 2)
        #expect(exposition.value("moments_queue_oldest_pending_age_seconds") == 42.5)
        #expect(exposition.text.contains("# TYPE moments_queue_jobs gauge"))
        // A failing store keeps the last sample.
        let failing = QueueSampler(minInterval: 0) { _ in throw CancellationError() }
        await failing.refresh()
        #expect(
            Exposition(String(decoding: MetricsExporter.exposition(), as: UTF8.self)).value(
                "moments_queue_jobs", ["state": "pending"]) == 7)
    }

    /// `metrics.token`: without it /metrics is open; with it, only `Bearer <token>` gets the metrics.
    @Test func tokenIsEnforcedWhenSet() async throws {
        let server = try await TestServer()
        var operations = OperationsSettings()
        operations.metricsToken = "metrics-s3cret"
        let (router, table) = buildRouter(server.service, operations: operations)
        #expect(table.routes.contains { $0.method == "get" && $0.path == "/metrics" })
        try await Application(router: router).test(.router) { client in
            let missing = try await client.get("/metrics", key: nil)
            try missing.expectProblem(.unauthorized, code: "invalid_metrics_token")
            #expect(!missing.text.contains("moments_"))
            try await client.get("/metrics", key: "wrong-token").expectProblem(
                .unauthorized, code: "invalid_metrics_token")
            try await client.get("/metrics", key: "metrics-s3cret-and-more").expectProblem(
                .unauthorized, code: "invalid_metrics_token")
            let (ok, exposition) = try await client.metrics(token: "metrics-s3cret")
            #expect(ok.status == .ok)
            #expect(exposition.value("moments_quota_refusals_total", ["code": "too_many_jobs"]) != nil)
        }
        // The default (empty) token leaves /metrics open.
        try await withServer(server, .router) { client in
            let open = try await client.get("/metrics", key: nil)
            #expect(open.status == .ok)
        }
    }

    /// A worker's metrics server: /metrics (token enforced) and /health, on a real port.
    @Test func workerMetricsServerServesMetricsAndHealth() async throws {
        var logger = Logger(label: "moments-test")
        logger.logLevel = .warning
        let refreshed = Atomic<Int>(0)
        let app = makeMetricsServer(host: "127.0.0.1", port: 0, token: "worker-token", logger: logger) {
            refreshed.add(1, ordering: .relaxed)
        }
        try await app.test(.live) { client in
            #expect(try await client.get("/health", key: nil).status == .ok)
            #expect(try await client.get("/metrics", key: nil).status == .unauthorized)
            let (ok, exposition) = try await client.metrics(token: "worker-token")
            #expect(ok.status == .ok && ok.headers[.contentType] == MetricsExporter.contentType)
            #expect(exposition.value("moments_workers") != nil)
            #expect(try await client.get("/api/v1/jobs", key: "worker-token").status == .notFound)
        }
        #expect(refreshed.load(ordering: .relaxed) == 1)
        // metrics.workerPort 0 turns the worker's server off.
        var operations = OperationsSettings()
        #expect(workerMetricsServer(operations, host: "127.0.0.1", logger: logger) != nil)
        #expect(workerMetricsService(operations, host: "127.0.0.1", logger: logger) != nil)
        operations.metricsWorkerPort = 0
        #expect(workerMetricsServer(operations, host: "127.0.0.1", logger: logger) == nil)
        #expect(workerMetricsService(operations, host: "127.0.0.1", logger: logger) == nil)
    }

    /// Two workers on one host with the same `metrics.workerPort`: the second logs that its metrics
    /// server could not start and goes on (the service returns instead of stopping the worker).
    @Test func takenWorkerPortIsNotFatal() async throws {
        let sink = MemoryLogSink()
        var warnings = Logger(label: "moments-test") { JSONLogHandler(label: $0, sink: sink) }
        warnings.logLevel = .warning
        let logger = warnings
        let first = makeMetricsServer(host: "127.0.0.1", port: 0, token: "", logger: logger)
        try await first.test(.live) { client in
            var operations = OperationsSettings()
            operations.metricsWorkerPort = try #require(client.port)
            let second = try #require(workerMetricsService(operations, host: "127.0.0.1", logger: logger))
            try await second.service.run()
            let open = try await client.get("/metrics", key: nil)
            #expect(open.status == .ok)
        }
        let lines = try sink.objects()
        #expect(
            lines.contains {
                ($0["message"] as? String)?.contains("metrics server on port") == true
                    && $0["level"] as? String == "error"
            },
            "\(sink.all)")
    }

    /// metrics.token, metrics.workerPort and log.format come from the environment; the shipped
    /// Config/moments.json holds the built-in defaults.
    @Test func operationsKeys() async throws {
        let shipped = OperationsSettings(
            reader: try await MomentsConfiguration.reader(environment: [:], file: "Config/moments.json"))
        #expect(shipped == OperationsSettings())
        #expect(shipped.metricsToken == "" && shipped.metricsWorkerPort == 9464 && shipped.logFormat == .text)
        let set = OperationsSettings(
            reader: try await MomentsConfiguration.reader(
                environment: ["METRICS_TOKEN": "abc", "METRICS_WORKER_PORT": "9100", "LOG_FORMAT": "JSON"],
                file: "/nonexistent/moments.json"))
        #expect(set.metricsToken == "abc" && set.metricsWorkerPort == 9100 && set.logFormat == .json)
        let odd = OperationsSettings(
            reader: try await MomentsConfiguration.reader(
                environment: ["METRICS_WORKER_PORT": "0", "LOG_FORMAT": "yaml"], file: "/nonexistent/moments.json"))
        #expect(odd.metricsWorkerPort == 0 && odd.logFormat == .text)
    }

    /// One JSON object per line: ISO 8601 UTC time, level, label, message, metadata flattened
    /// (the call's over the logger's), hostile text escaped, reserved keys kept apart.
    @Test func jsonLogHandlerWritesOneObjectPerLine() throws {
        let sink = MemoryLogSink()
        var logger = Logger(label: "moments") { JSONLogHandler(label: $0, sink: sink) }
        logger.logLevel = .debug
        logger[metadataKey: "request_id"] = "req-1"
        logger[metadataKey: "job"] = "job-a"
        logger.info(
            "job \"started\"\nforged line {\"level\":\"critical\"}",
            metadata: [
                "job": "job-b", "worker": "0",
                "message": "shadow", "sizes": ["1", "2"],
                "nested": ["k": "v"]
            ])
        logger.trace("below the level")
        logger.error("tab\tand \u{1} control")
        let objects = try sink.objects()
        #expect(objects.count == 2)
        let first = try #require(objects.first)
        #expect(first["level"] as? String == "info" && first["label"] as? String == "moments")
        #expect(first["message"] as? String == "job \"started\"\nforged line {\"level\":\"critical\"}")
        #expect(
            first["request_id"] as? String == "req-1" && first["job"] as? String == "job-b"
                && first["worker"] as? String == "0")
        #expect(first["meta_message"] as? String == "shadow")
        #expect(first["sizes"] as? [String] == ["1", "2"] && (first["nested"] as? [String: String]) == ["k": "v"])
        let time = try #require(first["time"] as? String)
        #expect(time.wholeMatch(of: /\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z/) != nil, "\(time)")
        let parsed = try #require(
            ISO8601DateFormatter().date(
                from: time.replacingOccurrences(of: #"\.\d{3}"#, with: "", options: .regularExpression)))
        #expect(abs(parsed.timeIntervalSinceNow) < 60)
        #expect(
            objects.last?["message"] as? String == "tab\tand \u{1} control"
                && objects.last?["level"] as? String == "error")
        #expect(JSONLogHandler.timestamp(seconds: 0, milliseconds: 7) == "1970-01-01T00:00:00.007Z")
    }

    /// A request's log lines carry its request id (here: /ready failing on a tiny disk floor).
    @Test func requestLogsCarryTheRequestID() async throws {
        let scratch = Scratch()
        let sink = MemoryLogSink()
        let service = try await Self.jsonLoggedService(scratch, plans: TestServer.roomyPlans, sink: sink) {
            $0.minFreeBytes = 1 << 60
        }
        let (app, _) = buildApplication(
            service, logger: Logger(label: "moments-http") { JSONLogHandler(label: $0, sink: sink) },
            background: service.background)
        try await app.test(.router) { client in
            let response = try await client.get(
                "/ready", key: nil, headers: [HTTPField.Name("X-Request-Id")!: "metrics-test-42"])
            #expect(response.status == .serviceUnavailable)
        }
        let lines = try sink.objects()
        let notReady = try #require(lines.first { $0["message"] as? String == "not ready" }, "\(sink.all)")
        #expect(notReady["request_id"] as? String == "metrics-test-42")
        #expect(notReady["level"] as? String == "warning" && notReady["label"] as? String == "moments-http")
    }
}
