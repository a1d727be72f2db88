import Foundation
import HTTPTypes
import HummingbirdTesting
import Store
import AnalysisDecode
import MediaEngine
import MediaPictures
import NIOCore
import Testing

@Suite("The job service over HTTP", .serialized)
struct WalkthroughTests {
    /// The README's curl walkthrough, over real HTTP: account, upload, poll, download, poster,
    /// analysis, list, delete.
    @Test func readmeWalkthrough() async throws {
        let server = try await TestServer(media: .shipped)
        let video = try await Fixtures.data(.short)
        try await withServer(server, .live) { client in
            let (_, key) = try await client.createAccount()
            let upload = try await client.upload(
                key: key, file: video, fields: [("target_duration", "5"), ("quality", "medium")])
            #expect(upload.status == .ok, "\(upload.text)")
            let accepted = try upload.json()
            let job = try #require(accepted["job_id"] as? String)
            #expect((accepted["estimated_time"] as? Int ?? 0) >= 1)
            #expect((accepted["message"] as? String)?.isEmpty == false)

            let statuses = try await client.poll(job: job, key: key) {
                ($0["status"] as? String) == "completed" || ($0["status"] as? String) == "failed"
            }
            let progress = statuses.compactMap { $0["progress"] as? Int }
            #expect(progress == progress.sorted(), "progress went backwards: \(progress)")
            let last = try #require(statuses.last)
            #expect(last["status"] as? String == "completed", "\(last)")
            #expect(last["progress"] as? Int == 100)
            #expect((last["result_url"] as? String)?.hasSuffix("/api/v1/jobs/\(job)/download") == true)
            #expect(Set(last.keys) == ["job_id", "status", "progress", "message", "result_url"])

            let download = try await client.get("/api/v1/jobs/\(job)/download", key: key)
            #expect(download.status == .ok)
            #expect(download.headers[.contentType] == "video/mp4")
            #expect(download.headers[.acceptRanges] == "bytes")
            #expect(download.headers[.contentDisposition] == "attachment; filename=\"highlight_\(job).mp4\"")
            let file = server.scratch.path("highlight.mp4")
            try Data(download.body.readableBytesView).write(to: URL(fileURLWithPath: file))
            let info = try Probe.probe(file)
            #expect(info.duration > 3 && info.duration < 7, "highlight of \(info.duration) s for a 5 s target")
            #expect(info.video.displayHeight <= 720)

            let detail = try await client.get("/api/v1/jobs/\(job)", key: key).json()
            #expect((detail["segments"] as? [Any])?.isEmpty == false)
            let output = try #require(detail["output"] as? [String: Any])
            #expect(output["size"] as? Int == download.body.readableBytes)
            let input = try #require(detail["input"] as? [String: Any])
            #expect(input["width"] as? Int == 320 && input["video_codec"] as? String == "h264")
            #expect((detail["parameters"] as? [String: Any])?["quality"] as? String == "medium")
            #expect(detail["started_at"] is String && detail["finished_at"] is String)

            let poster = try await client.get("/api/v1/jobs/\(job)/poster", key: key)
            #expect(poster.status == .ok && poster.headers[.contentType] == "image/jpeg")
            #expect(Array(poster.body.readableBytesView.prefix(2)) == [0xFF, 0xD8])
            let analysis = try await client.get("/api/v1/jobs/\(job)/analysis", key: key)
            let analysisJSON = try analysis.json()
            #expect(analysis.status == .ok && (analysisJSON["segments"] as? [Any])?.isEmpty == false)

            let list = try await client.get("/api/v1/jobs", key: key).json()
            #expect(list["total"] as? Int == 1)
            #expect(((list["jobs"] as? [[String: Any]])?.first?["job_id"] as? String) == job)

            // The upload is kept for re-cuts (plans.free.recuts) until the job's media are deleted.
            #expect(try await server.service.mediaStorage.mediaExists(jobID: job, file: .input))

            // DELETE on a finished job deletes its media, the kept upload too; again is fine (idempotent).
            for _ in 0..<2 {
                let deleted = try await client.get("/api/v1/jobs/\(job)", key: key, method: .delete)
                #expect(deleted.status == .ok)
                #expect(try await !server.service.mediaStorage.mediaExists(jobID: job, file: .input))
                #expect(try deleted.json()["status"] as? String == "completed")
            }
            #expect(!FileManager.default.fileExists(atPath: server.layout.jobDirectory(job)))
            try await client.get("/api/v1/jobs/\(job)/download", key: key).expectProblem(.gone, code: "media_deleted")
            #expect(try await client.get("/api/v1/jobs/\(job)/status", key: key).json()["result_url"] is NSNull)
        }
    }

    /// Byte ranges as AVPlayer uses them: 0-1, suffix, open-ended, If-Range, HEAD, invalid → 416.
    @Test func downloadRanges() async throws {
        let server = try await TestServer(media: .shipped)
        let video = try await Fixtures.data(.short)
        try await withServer(server, .router) { client in
            let (_, key) = try await client.createAccount()
            let job = try #require(
                try await client.upload(key: key, file: video, fields: [("target_duration", "5")]).json()["job_id"]
                    as? String)
            let early = try await client.get("/api/v1/jobs/\(job)/download", key: key)
            if early.status != .ok {
                let problem = try early.expectProblem(.conflict, code: "job_not_completed")
                #expect(problem["job_status"] as? String != nil)
            }
            _ = try await client.poll(job: job, key: key) { ($0["status"] as? String) == "completed" }
            let full = try await client.get("/api/v1/jobs/\(job)/download", key: key)
            let bytes = Array(full.body.readableBytesView)
            let size = bytes.count
            let etag = try #require(full.headers[.eTag])
            let uri = "/api/v1/jobs/\(job)/download"

            let first = try await client.get(uri, key: key, headers: [.range: "bytes=0-1"])
            #expect(first.status == .partialContent)
            #expect(first.headers[.contentRange] == "bytes 0-1/\(size)")
            #expect(Array(first.body.readableBytesView) == Array(bytes[0...1]))

            let suffix = try await client.get(uri, key: key, headers: [.range: "bytes=-100"])
            #expect(suffix.status == .partialContent)
            #expect(suffix.headers[.contentRange] == "bytes \(size - 100)-\(size - 1)/\(size)")
            #expect(Array(suffix.body.readableBytesView) == Array(bytes[(size - 100)...]))

            let open = try await client.get(uri, key: key, headers: [.range: "bytes=1000-"])
            #expect(open.status == .partialContent)
            #expect(open.headers[.contentLength] == String(size - 1000))
            #expect(Array(open.body.readableBytesView) == Array(bytes[1000...]))

            let matching = try await client.get(uri, key: key, headers: [.range: "bytes=10-19", .ifRange: etag])
            #expect(matching.status == .partialContent && matching.body.readableBytes == 10)
            let stale = try await client.get(uri, key: key, headers: [.range: "bytes=10-19", .ifRange: "\"stale\""])
            #expect(stale.status == .ok && stale.body.readableBytes == size)

            let head = try await client.get(uri, key: key, method: .head)
            #expect(head.status == .ok && head.headers[.contentLength] == String(size) && head.body.readableBytes == 0)
            // Range is defined for GET only: HEAD describes the whole file.
            let headRange = try await client.get(uri, key: key, method: .head, headers: [.range: "bytes=0-9"])
            #expect(headRange.status == .ok && headRange.headers[.contentLength] == String(size))
            // A last position past the end (even past Int64) means "to the end".
            let huge = try await client.get(uri, key: key, headers: [.range: "bytes=\(size - 5)-99999999999999999999"])
            #expect(huge.status == .partialContent && huge.body.readableBytes == 5)

            for invalid in ["bytes=\(size)-", "bytes=500-100", "bytes=abc", "bytes=-0", "bytes"] {
                let refused = try await client.get(uri, key: key, headers: [.range: invalid])
                try refused.expectProblem(.rangeNotSatisfiable, code: "range_not_satisfiable")
                #expect(refused.headers[.contentRange] == "bytes */\(size)", "\(invalid)")
            }
        }
    }

    /// DELETE while the worker renders: the job is cancelled at once, the worker stops within a
    /// second and its files are gone.
    @Test func cancelDuringProcessing() async throws {
        let server = try await TestServer(media: .shipped)
        let video = try await Fixtures.data(.long)
        try await withServer(server, .live) { client in
            let (_, key) = try await client.createAccount()
            let job = try #require(try await client.upload(key: key, file: video).json()["job_id"] as? String)
            _ = try await client.poll(job: job, key: key) {
                ($0["status"] as? String) == "processing" && ($0["progress"] as? Int ?? 0) >= 5
            }
            let started = Date()
            let cancelled = try await client.get("/api/v1/jobs/\(job)", key: key, method: .delete)
            let took = Date().timeIntervalSince(started)
            #expect(cancelled.status == .ok)
            #expect(try cancelled.json()["status"] as? String == "cancelled")
            #expect(took < 3, "the worker took \(took) s to stop (the DELETE waits at most 3 s for it)")
            #expect(server.service.runner.runningJobIDs.isEmpty)
            #expect(!FileManager.default.fileExists(atPath: server.layout.jobDirectory(job)))
            #expect(
                try await client.get("/api/v1/jobs/\(job)/status", key: key).json()["status"] as? String == "cancelled")
            try await client.get("/api/v1/jobs/\(job)/download", key: key).expectProblem(
                .conflict, code: "job_cancelled")
            // Idempotent.
            #expect(
                try await client.get("/api/v1/jobs/\(job)", key: key, method: .delete).json()["status"] as? String
                    == "cancelled")
        }
    }

    /// A pending job cancelled before any worker took it.
    @Test func cancelPendingJob() async throws {
        let server = try await TestServer(media: .shipped)
        let video = try await Fixtures.data(.long)
        try await withServer(server, .router) { client in
            let (_, key) = try await client.createAccount()
            let first = try #require(try await client.upload(key: key, file: video).json()["job_id"] as? String)
            let second = try #require(try await client.upload(key: key, file: video).json()["job_id"] as? String)
            let cancelled = try await client.get("/api/v1/jobs/\(second)", key: key, method: .delete)
            #expect(try cancelled.json()["status"] as? String == "cancelled")
            #expect(!FileManager.default.fileExists(atPath: server.layout.jobDirectory(second)))
            _ = try await client.get("/api/v1/jobs/\(first)", key: key, method: .delete)
            #expect(server.storedFiles().isEmpty, "\(server.storedFiles())")
        }
    }

    /// A video that probes fine but has nothing worth showing: the job fails with the reason and
    /// leaves no files.
    @Test func jobFailingInProcessing() async throws {
        let server = try await TestServer(media: .shipped)
        let video = try await Fixtures.data(.black)
        try await withServer(server, .router) { client in
            let (_, key) = try await client.createAccount()
            let job = try #require(
                try await client.upload(key: key, file: video, fields: [("target_duration", "5")]).json()["job_id"]
                    as? String)
            let last = try #require(
                try await client.poll(job: job, key: key) { ($0["status"] as? String) == "failed" }.last)
            #expect((last["message"] as? String)?.contains("No usable footage") == true, "\(last)")
            #expect(last["result_url"] is NSNull)
            let detail = try await client.get("/api/v1/jobs/\(job)", key: key).json()
            #expect((detail["error"] as? [String: Any])?["code"] as? String == "no_usable_footage")
            try await client.get("/api/v1/jobs/\(job)/download", key: key).expectProblem(.conflict, code: "job_failed")
            #expect(server.storedFiles().isEmpty, "\(server.storedFiles())")
        }
    }

    /// Graceful shutdown while a job runs: the job goes back to the queue without using an attempt.
    @Test func shutdownRequeuesRunningJob() async throws {
        let server = try await TestServer(media: .shipped)
        let video = try await Fixtures.data(.long)
        let job: String = try await withServer(server, .live) { client in
            let (_, key) = try await client.createAccount()
            let job = try #require(try await client.upload(key: key, file: video).json()["job_id"] as? String)
            _ = try await client.poll(job: job, key: key) { ($0["status"] as? String) == "processing" }
            return job
        }
        let stored = try #require(try await server.service.database.job(id: job))
        #expect(stored.status == .pending)
        #expect(stored.attempts == 0)
        #expect(try await server.service.mediaStorage.mediaExists(jobID: job, file: .input))
    }
}
