import Foundation
import NIOHTTP1
import Testing

@testable import ObjectStorage

func s3ErrorXML(_ code: String, _ message: String = "message") -> String {
    "<?xml version=\"1.0\" encoding=\"UTF-8\"?><Error><Code>\(code)</Code><Message>\(message)</Message>"
        + "<RequestId>REQ</RequestId></Error>"
}

func scriptedClient(_ server: ScriptedHTTPServer, partSize: Int64 = 5 * 1024 * 1024) -> S3Client {
    S3Client(
        configuration: S3Configuration(
            endpoint: server.endpoint, region: "us-east-1", bucket: "media", pathStyle: true,
            credentials: AWSCredentials(accessKeyId: "AKIAEXAMPLE", secretAccessKey: "secret"),
            multipartThreshold: partSize, partSize: partSize, uploadConcurrency: 1,
            retry: S3RetryPolicy(maxAttempts: 4, baseDelay: .milliseconds(20))))
}

@Suite("S3 retries and failure paths (scripted server)")
struct S3RetryTests {
    @Test("503 SlowDown and 500 are retried until the request succeeds")
    func transientErrorsAreRetried() async throws {
        let server = try await ScriptedHTTPServer.start([
            .init(status: .serviceUnavailable, body: s3ErrorXML("SlowDown")),
            .init(status: .internalServerError, body: s3ErrorXML("InternalError")),
            .init(status: .ok, headers: [("ETag", "\"abc\"")])
        ])
        let s3 = scriptedClient(server)
        defer { Task { try? await s3.shutdown() } }
        let etag = try await s3.putObject(key: "k", bytes: [1, 2, 3])
        #expect(etag == "\"abc\"")
        #expect(server.requests.count == 3)
        #expect(server.requests.allSatisfy { $0.method == .PUT && $0.uri == "/media/k" && $0.bodyBytes == 3 })
        try await server.stop()
    }

    @Test("429 is retried; retries stop after maxAttempts with the last error")
    func retriesAreBounded() async throws {
        let server = try await ScriptedHTTPServer.start([
            .init(status: .tooManyRequests), .init(status: .serviceUnavailable, body: s3ErrorXML("SlowDown")),
            .init(status: .serviceUnavailable, body: s3ErrorXML("SlowDown")),
            .init(status: .serviceUnavailable, body: s3ErrorXML("SlowDown", "Please reduce your request rate.")),
            .init(status: .ok)
        ])
        let s3 = scriptedClient(server)
        defer { Task { try? await s3.shutdown() } }
        let error = await #expect(throws: S3Error.self) { _ = try await s3.headObject(key: "k") }
        #expect(error?.status == 503)
        #expect(server.requests.count == 4)
        try await server.stop()
    }

    @Test("4xx is final: one request, the S3 code and message in the error")
    func clientErrorsAreNotRetried() async throws {
        let server = try await ScriptedHTTPServer.start([
            .init(status: .forbidden, body: s3ErrorXML("AccessDenied", "Access Denied")),
            .init(status: .ok)
        ])
        let s3 = scriptedClient(server)
        defer { Task { try? await s3.shutdown() } }
        let error = await #expect(throws: S3Error.self) { try await s3.putObject(key: "k", bytes: [1]) }
        #expect(
            error
                == S3Error(
                    operation: "PutObject", status: 403, code: "AccessDenied", message: "Access Denied",
                    requestId: "REQ", key: "k"))
        #expect(server.requests.count == 1)
        try await server.stop()
    }

    @Test("CompleteMultipartUpload answering 200 with an InternalError body is retried")
    func completeWithErrorBody() async throws {
        let server = try await ScriptedHTTPServer.start([
            .init(status: .ok, body: s3ErrorXML("InternalError")),
            .init(
                status: .ok, body: "<CompleteMultipartUploadResult><ETag>\"x-2\"</ETag></CompleteMultipartUploadResult>"
            )
        ])
        let s3 = scriptedClient(server)
        defer { Task { try? await s3.shutdown() } }
        let etag = try await s3.completeMultipartUpload(
            key: "k", uploadId: "U", parts: [.init(partNumber: 1, etag: "\"a\""), .init(partNumber: 2, etag: "\"b\"")])
        #expect(etag == "\"x-2\"")
        #expect(server.requests.map(\.uri) == ["/media/k?uploadId=U", "/media/k?uploadId=U"])
        try await server.stop()
    }

    @Test("a multipart upload whose part is refused is aborted, and the error reported")
    func failedUploadIsAborted() async throws {
        let server = try await ScriptedHTTPServer.start([
            .init(
                status: .ok,
                body:
                    "<InitiateMultipartUploadResult><Bucket>media</Bucket><Key>big</Key><UploadId>UP1</UploadId></InitiateMultipartUploadResult>"
            ),
            .init(status: .ok, headers: [("ETag", "\"p1\"")]),
            .init(status: .badRequest, body: s3ErrorXML("InvalidArgument", "Part number must be an integer")),
            .init(status: .noContent)
        ])
        let s3 = scriptedClient(server)
        defer { Task { try? await s3.shutdown() } }
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        _ = try writePatternFile(at: "\(dir)/in.bin", size: 6 * 1024 * 1024)

        let error = await #expect(throws: S3Error.self) { try await s3.upload(fileAt: "\(dir)/in.bin", key: "big") }
        #expect(error?.code == "InvalidArgument")
        let requests = server.requests
        #expect(requests.map(\.method) == [.POST, .PUT, .PUT, .DELETE])
        #expect(
            requests.map(\.uri) == [
                "/media/big?uploads=", "/media/big?partNumber=1&uploadId=UP1", "/media/big?partNumber=2&uploadId=UP1",
                "/media/big?uploadId=UP1"
            ])
        #expect(requests[1].bodyBytes == 5 * 1024 * 1024)
        #expect(requests[2].bodyBytes == 1024 * 1024)
        try await server.stop()
    }

    @Test("an empty or over-long key is refused before anything is sent (it would address the bucket)")
    func invalidKeys() async throws {
        let server = try await ScriptedHTTPServer.start([])
        let s3 = scriptedClient(server)
        defer { Task { try? await s3.shutdown() } }
        for key in ["", String(repeating: "k", count: 1025)] {
            let error = await #expect(throws: S3Error.self) { try await s3.deleteObject(key: key) }
            #expect(error?.code == "InvalidObjectKey")
        }
        #expect(server.requests.isEmpty)
        try await server.stop()
    }

    @Test("a download cut short is retried; when every try is cut, the previous file is left untouched")
    func truncatedDownload() async throws {
        let cut = ScriptedHTTPServer.Reply(status: .ok, body: "0123456789", declaredLength: 100)
        let server = try await ScriptedHTTPServer.start([cut, .init(status: .ok, body: "complete body")])
        let s3 = scriptedClient(server)
        defer { Task { try? await s3.shutdown() } }
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }

        let info = try await s3.getObject(key: "k", toFileAt: "\(dir)/out")
        #expect(info.size == 13)
        #expect(FileManager.default.contents(atPath: "\(dir)/out") == Data("complete body".utf8))
        #expect(server.requests.count == 2)
        try await server.stop()

        let failing = try await ScriptedHTTPServer.start(Array(repeating: cut, count: 8))
        let s3b = scriptedClient(failing)
        defer { Task { try? await s3b.shutdown() } }
        await #expect(throws: (any Error).self) { try await s3b.getObject(key: "k", toFileAt: "\(dir)/out") }
        #expect(failing.requests.count == 4)
        #expect(FileManager.default.contents(atPath: "\(dir)/out") == Data("complete body".utf8))
        await #expect(throws: (any Error).self) { try await s3b.getObject(key: "k", toFileAt: "\(dir)/new") }
        #expect(!FileManager.default.fileExists(atPath: "\(dir)/new"))
        try await failing.stop()
    }

    @Test("a cancelled multipart upload is aborted (the abort itself is not cancelled)")
    func cancelledUploadIsAborted() async throws {
        let server = try await ScriptedHTTPServer.start([
            .init(
                status: .ok,
                body: "<InitiateMultipartUploadResult><UploadId>UP2</UploadId></InitiateMultipartUploadResult>"),
            .init(status: .ok, hang: true),
            .init(status: .noContent)
        ])
        let s3 = scriptedClient(server)
        defer { Task { try? await s3.shutdown() } }
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        _ = try writePatternFile(at: "\(dir)/in.bin", size: 6 * 1024 * 1024)

        let upload = Task { try await s3.upload(fileAt: "\(dir)/in.bin", key: "big") }
        // Wait until the first part has been received (and hangs), then cancel.
        let deadline = ContinuousClock.now + .seconds(10)
        while server.requests.count < 2 && ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(10))
        }
        upload.cancel()
        await #expect(throws: (any Error).self) { try await upload.value }
        #expect(server.requests.map(\.method) == [.POST, .PUT, .DELETE])
        #expect(server.requests.last?.uri == "/media/big?uploadId=UP2")
        try await server.stop()
    }
}
