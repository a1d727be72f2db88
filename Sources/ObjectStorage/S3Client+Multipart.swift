import AsyncHTTPClient
import Foundation
import Logging
import NIOCore
import NIOHTTP1
import NIOPosix
import _NIOFileSystem

/// Multipart uploads: start, parts, complete, abort, and `upload(fileAt:)`, which picks a single
/// PUT or parts by the file's size.
extension S3Client {
    /// Starts a multipart upload and returns its upload id.
    public func createMultipartUpload(key: String, contentType: String? = nil) async throws -> String {
        try await send(
            "CreateMultipartUpload", .POST, key: key, query: [("uploads", "")], headers: contentTypeHeader(contentType),
            body: .bytes(ByteBuffer())
        ) { response in
            let root = try await xmlBody(response, "CreateMultipartUpload")
            guard let id = root.string("UploadId"), !id.isEmpty else {
                throw S3Error(
                    operation: "CreateMultipartUpload", status: 200, code: "InvalidResponse", message: "no UploadId",
                    key: key)
            }
            return id
        }
    }

    /// Uploads bytes `range` of a file as part `partNumber` (1...10000), streamed from disk.
    public func uploadPart(
        key: String, uploadId: String, partNumber: Int, fileAt path: String, range: Range<Int64>
    ) async throws -> S3CompletedPart {
        try await send(
            "UploadPart", .PUT, key: key, query: [("partNumber", String(partNumber)), ("uploadId", uploadId)],
            body: .file(FilePath(path), range), payload: .unsigned
        ) { response in
            try await discard(response)
            return S3CompletedPart(partNumber: partNumber, etag: try etag(response, "UploadPart", key))
        }
    }

    /// Joins the parts into the object. Returns the object's ETag. S3 may answer 200 with an error
    /// body; that is reported (and retried when transient) like any other error.
    @discardableResult
    public func completeMultipartUpload(key: String, uploadId: String, parts: [S3CompletedPart]) async throws -> String
    {
        let xml = Self.completeMultipartUploadXML(parts)
        let bytes = Array(xml.utf8)
        return try await send(
            "CompleteMultipartUpload", .POST, key: key, query: [("uploadId", uploadId)],
            headers: [("content-type", "application/xml")], body: .bytes(ByteBuffer(bytes: bytes)), payload: .of(bytes)
        ) { response in
            let root = try await xmlBody(response, "CompleteMultipartUpload")
            if root.name == "Error" {
                let code = root.string("Code")
                let status = code == "SlowDown" ? 503 : (code == "InternalError" ? 500 : 200)
                throw S3Error(
                    operation: "CompleteMultipartUpload", status: status, code: code, message: root.string("Message"),
                    requestId: root.string("RequestId"), key: key)
            }
            return root.string("ETag") ?? ""
        }
    }

    /// Discards an unfinished multipart upload and its parts.
    public func abortMultipartUpload(key: String, uploadId: String) async throws {
        try await send(
            "AbortMultipartUpload", .DELETE, key: key, query: [("uploadId", uploadId)],
            accept: { [200, 204, 404].contains($0) }
        ) { response in try await discard(response) }
    }

    /// The body of CompleteMultipartUpload, parts in ascending order.
    public static func completeMultipartUploadXML(_ parts: [S3CompletedPart]) -> String {
        var xml = "<CompleteMultipartUpload xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">"
        for part in parts.sorted(by: { $0.partNumber < $1.partNumber }) {
            xml += "<Part><PartNumber>\(part.partNumber)</PartNumber><ETag>\(xmlEscape(part.etag))</ETag></Part>"
        }
        return xml + "</CompleteMultipartUpload>"
    }

    /// Uploads a file: one PUT up to `multipartThreshold`, parts of `partSize` above it
    /// (`uploadConcurrency` at a time). A failed or cancelled multipart upload is aborted so no parts
    /// are left behind. Returns the ETag.
    @discardableResult
    public func upload(fileAt path: String, key: String, contentType: String? = nil) async throws -> String {
        let size = try await fileSize(path)
        if size <= configuration.multipartThreshold {
            return try await putObject(key: key, fileAt: path, contentType: contentType)
        }
        let uploadId = try await createMultipartUpload(key: key, contentType: contentType)
        do {
            let partSize = configuration.partSize
            let partCount = Int((size + partSize - 1) / partSize)
            let parts = try await withThrowingTaskGroup(of: S3CompletedPart.self) { group in
                var next = 1
                var done: [S3CompletedPart] = []
                while next <= partCount || !group.isEmpty {
                    // Keep up to `uploadConcurrency` parts in flight; the first failure cancels the rest.
                    while next <= partCount && next - done.count <= configuration.uploadConcurrency {
                        let number = next
                        let range = Int64(number - 1) * partSize..<min(Int64(number) * partSize, size)
                        group.addTask {
                            try await self.uploadPart(
                                key: key, uploadId: uploadId, partNumber: number, fileAt: path, range: range)
                        }
                        next += 1
                    }
                    if let part = try await group.next() { done.append(part) }
                }
                return done
            }
            return try await completeMultipartUpload(key: key, uploadId: uploadId, parts: parts)
        } catch {
            // Outside the (possibly cancelled) task so the abort itself is not cancelled.
            let abort = Task { try await self.abortMultipartUpload(key: key, uploadId: uploadId) }
            do {
                try await abort.value
            } catch let abortError {
                logger.warning(
                    "S3 AbortMultipartUpload failed; parts may remain until the bucket's lifecycle removes them",
                    metadata: ["key": "\(key)", "error": "\(abortError)"])
            }
            throw error
        }
    }
}
