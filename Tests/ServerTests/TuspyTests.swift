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

/// tuspy, the tus project's Python client, against a live server: the upload is cut off at 60 %
/// by a proxy that drops the connection, a new uploader resumes it (HEAD, then the rest), and
/// the job completes.
@Suite("Resumable uploads (tuspy)")
struct TuspyTests {
    @Test func tuspyResumesACutOffUploadAndTheJobCompletes() async throws {
        let server = try await TestServer()
        try await withServer(server, .live) { client in
            let (_, key) = try await client.createAccount()
            let port = try #require(client.port)
            let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent(
                "../../scripts/tus-upload"
            ).standardized.path
            let output = try await Curl.process(
                "/usr/bin/env",
                [
                    "python3", script, "--url", "http://127.0.0.1:\(port)/api/v1/uploads", "--key", key,
                    "--cut-at", "0.6", "--metadata", "target_duration=5", "--metadata", "quality=low",
                    Fixtures.path(.short)
                ])
            let result = try #require(
                try JSONSerialization.jsonObject(with: Data(output.utf8)) as? [String: Any], "\(output)")
            let size = try #require(result["size"] as? Int)
            let resumed = try #require(result["resumed_from"] as? Int)
            #expect(resumed > 0 && resumed <= size * 6 / 10 + 1, "resumed from \(resumed) of \(size): \(output)")
            #expect(result["offset"] as? Int == size)
            let url = try #require(result["url"] as? String)
            let path = try #require(URL(string: url)?.path)
            let upload = try await Wire(client).send(.GET, path, key: key).json()
            let job = try #require(upload["job_id"] as? String, "\(upload)")
            let statuses = try await client.poll(job: job, key: key) {
                ["completed", "failed"].contains($0["status"] as? String)
            }
            #expect(statuses.last?["status"] as? String == "completed", "\(statuses.last ?? [:])")
        }
    }
}
