import Foundation
import HTTPTypes
import HummingbirdTesting
import NIOCore
import Testing

/// Every bad input gets a problem+json that says what to do, and leaves nothing behind.
@Suite("Errors are problem+json", .onceAcrossEngines)
struct ProblemTests {
    @Test func authentication() async throws {
        let server = try await TestServer()
        try await withServer(server, .router) { client in
            try await client.get("/api/v1/jobs", key: nil).expectProblem(.unauthorized, code: "missing_api_key")
            let wrong = try await client.get("/api/v1/jobs", key: "mk_not-a-key")
            try wrong.expectProblem(.unauthorized, code: "invalid_api_key")
            #expect(wrong.headers[.wwwAuthenticate]?.hasPrefix("Bearer") == true)
            try await client.get("/api/v1/jobs", key: nil, headers: [.authorization: "Basic Zm9vOmJhcg=="])
                .expectProblem(.unauthorized, code: "invalid_authorization")
            try await client.upload(key: "mk_wrong", file: Data("x".utf8)).expectProblem(
                .unauthorized, code: "invalid_api_key")
        }
        #expect(server.storedFiles().isEmpty)
    }

    @Test func unknownAndForeignJobs() async throws {
        let server = try await TestServer()
        let video = try await Fixtures.data(.short)
        try await withServer(server, .router) { client in
            let (_, owner) = try await client.createAccount()
            let (_, stranger) = try await client.createAccount()
            let job = try #require(try await client.upload(key: owner, file: video).json()["job_id"] as? String)
            for suffix in ["", "/status", "/download", "/poster", "/analysis"] {
                try await client.get("/api/v1/jobs/\(job)\(suffix)", key: stranger).expectProblem(
                    .notFound, code: "job_not_found")
                try await client.get("/api/v1/jobs/00000000-0000-0000-0000-000000000000\(suffix)", key: owner)
                    .expectProblem(.notFound, code: "job_not_found")
            }
            try await client.get("/api/v1/jobs/\(job)", key: stranger, method: .delete).expectProblem(
                .notFound, code: "job_not_found")
            #expect(try await client.get("/api/v1/jobs", key: stranger).json()["total"] as? Int == 0)
            // The stranger's DELETE did nothing.
            #expect(
                try await client.get("/api/v1/jobs/\(job)/status", key: owner).json()["status"] as? String
                    != "cancelled")
            _ = try await client.get("/api/v1/jobs/\(job)", key: owner, method: .delete)
        }
    }

    @Test func malformedUploads() async throws {
        let server = try await TestServer()
        try await withServer(server, .router) { client in
            let (_, key) = try await client.createAccount()
            let video = try await Fixtures.data(.short)
            try await client.upload(key: key, file: nil, fields: [("target_duration", "10")]).expectProblem(
                .badRequest, code: "missing_file")
            try await client.upload(key: key, file: Data()).expectProblem(.badRequest, code: "empty_file")
            try await client.upload(key: key, file: video, fields: [("colour", "red")]).expectProblem(
                .badRequest, code: "unknown_field")
            try await client.upload(key: key, file: video, fields: [("target_duration", "1")]).expectProblem(
                .unprocessableContent, code: "invalid_target_duration")
            try await client.upload(key: key, file: video, fields: [("target_duration", "900")]).expectProblem(
                .unprocessableContent, code: "invalid_target_duration")
            try await client.upload(key: key, file: video, fields: [("target_duration", "ten")]).expectProblem(
                .badRequest, code: "invalid_target_duration")
            try await client.upload(key: key, file: video, fields: [("quality", "ultra")]).expectProblem(
                .unprocessableContent, code: "invalid_quality")
            try await client.upload(key: key, file: video, fields: [("quality", "low"), ("quality", "high")])
                .expectProblem(.badRequest, code: "duplicate_field")

            // Not multipart at all; multipart without a boundary; a body cut short; garbage.
            try await client.executeRequest(
                uri: "/api/v1/upload", method: .post,
                headers: [.authorization: "Bearer \(key)", .contentType: "video/mp4"],
                body: ByteBuffer(bytes: video)
            ).expectProblem(.unsupportedMediaType, code: "not_multipart")
            try await client.executeRequest(
                uri: "/api/v1/upload", method: .post,
                headers: [.authorization: "Bearer \(key)", .contentType: "multipart/form-data"],
                body: ByteBuffer(bytes: video)
            ).expectProblem(.badRequest, code: "malformed_multipart")
            var truncated = Multipart.body(file: video)
            truncated.moveWriterIndex(to: truncated.writerIndex - 200)
            try await client.executeRequest(
                uri: "/api/v1/upload", method: .post,
                headers: [.authorization: "Bearer \(key)", .contentType: Multipart.contentType],
                body: truncated
            ).expectProblem(.badRequest, code: "malformed_multipart")
            let garbage =
                "--\(Multipart.boundary)\r\nContent-Disposition form-data\r\n\r\nxx\r\n--\(Multipart.boundary)--\r\n"
            try await client.executeRequest(
                uri: "/api/v1/upload", method: .post,
                headers: [.authorization: "Bearer \(key)", .contentType: Multipart.contentType],
                body: ByteBuffer(string: garbage)
            ).expectProblem(.badRequest, code: "malformed_multipart")
            // A part header that never ends; a body without its closing boundary; a quoted
            // filename that tries to pose as the part's name.
            let endless =
                "--\(Multipart.boundary)\r\nContent-Disposition: form-data; name=\""
                + String(repeating: "x", count: 100_000)
            try await client.executeRequest(
                uri: "/api/v1/upload", method: .post,
                headers: [.authorization: "Bearer \(key)", .contentType: Multipart.contentType],
                body: ByteBuffer(string: endless)
            ).expectProblem(.badRequest, code: "malformed_multipart")
            var unclosed = ByteBuffer(
                string: "--\(Multipart.boundary)\r\nContent-Disposition: form-data; name=\"file\"\r\n\r\n")
            unclosed.writeBytes(video)
            unclosed.writeString("\r\n--\(Multipart.boundary)\r\n")
            try await client.executeRequest(
                uri: "/api/v1/upload", method: .post,
                headers: [.authorization: "Bearer \(key)", .contentType: Multipart.contentType],
                body: unclosed
            ).expectProblem(.badRequest, code: "malformed_multipart")
            let posing =
                "--\(Multipart.boundary)\r\nContent-Disposition: form-data; filename=\"v.mp4; name=file\"; name=\"colour\"\r\n\r\nred\r\n--\(Multipart.boundary)--\r\n"
            let refused = try await client.executeRequest(
                uri: "/api/v1/upload", method: .post,
                headers: [.authorization: "Bearer \(key)", .contentType: Multipart.contentType],
                body: ByteBuffer(string: posing))
            #expect(try refused.expectProblem(.badRequest, code: "unknown_field")["field"] as? String == "colour")
            #expect(try await client.get("/api/v1/jobs", key: key).json()["total"] as? Int == 0)
        }
        #expect(server.storedFiles().isEmpty, "\(server.storedFiles())")
    }

    /// Text, random bytes, a still image and a truncated MP4 are refused before a job exists.
    @Test func notUsableVideos() async throws {
        let server = try await TestServer()
        let video = try await Fixtures.data(.short)
        var random = SystemRandomNumberGenerator()
        let cases: [(String, Data, String)] = [
            ("text", Data(String(repeating: "not a video\n", count: 500).utf8), "not_media"),
            ("random", Data((0..<50_000).map { _ in UInt8.random(in: 0...255, using: &random) }), "not_media"),
            ("truncated", video.prefix(video.count / 2), "truncated")
        ]
        try await withServer(server, .router) { client in
            let (_, key) = try await client.createAccount()
            for (name, data, code) in cases {
                let problem = try await client.upload(key: key, file: data).expectProblem(.unprocessableContent)
                #expect((problem["type"] as? String)?.hasSuffix(code) == true, "\(name): \(problem)")
            }
        }
        #expect(server.storedFiles().isEmpty, "\(server.storedFiles())")
    }

    @Test func limits() async throws {
        // A 100 kB limit: the 300+ kB video is refused mid-stream (no Content-Length to go by).
        let small = try await TestServer { $0.maxUploadBytes = 100_000 }
        let video = try await Fixtures.data(.short)
        #expect(video.count > 200_000)
        try await withServer(small, .router) { client in
            let (_, key) = try await client.createAccount()
            let problem = try await client.upload(key: key, file: video).expectProblem(
                .contentTooLarge, code: "file_too_large")
            #expect(problem["limit_bytes"] as? Int == 100_000)
            try await client.upload(key: key, file: video, headers: [.contentLength: String(video.count + 300)])
                .expectProblem(.contentTooLarge, code: "file_too_large")
        }
        #expect(small.storedFiles().isEmpty, "\(small.storedFiles())")

        let tooLong = try await TestServer { $0.maxDurationSeconds = 5 }
        try await withServer(tooLong, .router) { client in
            let (_, key) = try await client.createAccount()
            try await client.upload(key: key, file: video).expectProblem(.unprocessableContent, code: "too_long")
        }
        #expect(tooLong.storedFiles().isEmpty)

        let fullDisk = try await TestServer { $0.minFreeBytes = Int64.max / 2 }
        try await withServer(fullDisk, .router) { client in
            let (_, key) = try await client.createAccount()
            try await client.upload(key: key, file: video).expectProblem(
                HTTPResponse.Status(code: 507), code: "insufficient_storage")
            let ready = try await client.get("/ready", key: nil)
            try ready.expectProblem(.serviceUnavailable, code: "not_ready")
        }
        #expect(fullDisk.storedFiles().isEmpty)
    }

    @Test func otherErrors() async throws {
        let server = try await TestServer()
        try await withServer(server, .router) { client in
            try await client.get("/api/v1/nothing-here", key: nil).expectProblem(.notFound, code: "not_found")
            let (_, key) = try await client.createAccount()
            try await client.get("/api/v1/jobs?limit=0", key: key).expectProblem(.badRequest, code: "invalid_query")
            try await client.get("/api/v1/jobs?offset=-3", key: key).expectProblem(.badRequest, code: "invalid_query")
            try await client.executeRequest(
                uri: "/api/v1/accounts", method: .post, headers: [:], body: ByteBuffer(string: "{nope")
            )
            .expectProblem(.badRequest, code: "invalid_json")
            try await client.executeRequest(
                uri: "/api/v1/accounts", method: .post, headers: [:], body: ByteBuffer(string: "{\"plan\":\"pro\"}")
            )
            .expectProblem(.badRequest, code: "unknown_field")
        }
    }
}
