import Foundation
import HTTPTypes
import HTTPEdge
import Hummingbird
import JobMedia
import ObjectStorage
import Wording

/// Serves a job's stored file wherever the media storage keeps it: a local file (FileResponder), an
/// object streamed from the bucket with the same range, If-Range, HEAD, ETag and Last-Modified
/// behaviour, or a 302 to a presigned URL of the bucket.
struct MediaResponder {
    let files = FileResponder()

    func respond(
        _ request: Request, context: AppRequestContext, download: MediaDownload, contentType: String,
        disposition: String?
    ) async throws -> Response {
        switch download {
        case .file(let path):
            return try await files.respond(
                request, context: context, path: path, contentType: contentType, disposition: disposition)
        case .redirect(let url):
            return Response(status: .found, headers: [.location: url.absoluteString, .cacheControl: "no-store"])
        case .object(let object):
            return try await respond(request, object: object, contentType: contentType, disposition: disposition)
        }
    }

    /// Streams the object (or the asked range of it) from the bucket: one ranged GET, its body
    /// passed on chunk by chunk as it arrives, never the whole file in memory.
    private func respond(_ request: Request, object: StoredObject, contentType: String, disposition: String?)
        async throws -> Response
    {
        let size = object.size
        let etag = object.etag ?? "\"\(String(size, radix: 16))\""
        let lastModified = object.lastModified.map(FileResponder.httpDate)
        var headers: HTTPFields = [
            .contentType: contentType,
            .acceptRanges: "bytes",
            .eTag: etag,
            .cacheControl: "private, max-age=3600"
        ]
        if let lastModified { headers[.lastModified] = lastModified }
        if let disposition { headers[.contentDisposition] = disposition }

        // Ranges are defined for GET only (RFC 9110 §14.2): HEAD describes the whole file.
        var range = request.method == .get ? ByteRange.parse(request.headers[.range], size: size) : .full
        if range != .full, let ifRange = request.headers[.ifRange], ifRange != etag, ifRange != lastModified {
            range = .full  // the client's copy is of another version: send the whole new one
        }
        let isHead = request.method == .head
        switch range {
        case .full:
            headers[.contentLength] = String(size)
            if isHead || size == 0 { return Response(status: .ok, headers: headers, body: ResponseBody()) }
            let stream = try await open(object, range: nil)
            return Response(status: .ok, headers: headers, body: ResponseBody(asyncSequence: stream.body))
        case .partial(let bytes):
            headers[.contentRange] = "bytes \(bytes.lowerBound)-\(bytes.upperBound)/\(size)"
            headers[.contentLength] = String(bytes.count)
            if isHead { return Response(status: .partialContent, headers: headers, body: ResponseBody()) }
            let stream = try await open(object, range: bytes)
            return Response(status: .partialContent, headers: headers, body: ResponseBody(asyncSequence: stream.body))
        case .unsatisfiable:
            throw Problem.rangeNotSatisfiable(request.headers[.range] ?? "", size: size)
        }
    }

    private func open(_ object: StoredObject, range: ClosedRange<Int64>?) async throws -> S3ObjectStream {
        do {
            return try await object.open(range: range)
        } catch MediaStorageError.notFound {
            // Deleted between the lookup and the read (the sweeper, or a DELETE).
            throw Problem(.gone, code: "media_deleted", detail: Say.fileDeleted)
        } catch MediaStorageError.unavailable {
            throw Problem.storageUnavailable
        }
    }
}

extension Problem {
    /// The media storage (the bucket) did not answer: try again; what failed is in the server log.
    static var storageUnavailable: Problem {
        Problem(
            .serviceUnavailable, code: "storage_unavailable", detail: Say.storageUnavailable,
            headers: [.retryAfter: String(MediaStorageError.retryAfterSeconds)])
    }

    /// Runs a media-storage call, turning an unreachable storage into a 503 the user can act on.
    static func storageCall<T>(_ body: () async throws -> T) async throws -> T {
        do {
            return try await body()
        } catch MediaStorageError.unavailable {
            throw Problem.storageUnavailable
        }
    }
}
