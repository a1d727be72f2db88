import Foundation
import HTTPTypes
import Hummingbird
import Wording

/// Serves a stored file with byte ranges (206 / 416), If-Range, HEAD, ETag and Last-Modified:
/// what AVPlayer and resumable downloads need.
public struct FileResponder: Sendable {
    public init() {}

    public let fileIO = FileIO()

    public func respond(
        _ request: Request, context: AppRequestContext, path: String, contentType: String,
        disposition: String?
    ) async throws -> Response {
        guard let attributes = try? FileManager.default.attributesOfItem(atPath: path),
            let size = (attributes[.size] as? NSNumber)?.int64Value
        else {
            throw Problem(.gone, code: "media_deleted", detail: Say.fileDeleted)
        }
        let modified = (attributes[.modificationDate] as? Date) ?? Date(timeIntervalSince1970: 0)
        let etag = "\"\(String(size, radix: 16))-\(String(Int64(modified.timeIntervalSince1970 * 1000), radix: 16))\""
        let lastModified = Self.httpDate(modified)

        var headers: HTTPFields = [
            .contentType: contentType,
            .acceptRanges: "bytes",
            .eTag: etag,
            .lastModified: lastModified,
            .cacheControl: "private, max-age=3600"
        ]
        if let disposition { headers[.contentDisposition] = disposition }

        // Ranges are defined for GET only (RFC 9110 §14.2): HEAD describes the whole file.
        var range = request.method == .get ? ByteRange.parse(request.headers[.range], size: size) : .full
        if range != .full, let ifRange = request.headers[.ifRange], ifRange != etag, ifRange != lastModified {
            range = .full  // the client's copy is of another version: send the whole new one
        }
        let isHead = request.method == .head
        do {
            return try await respond(
                range: range, isHead: isHead, headers: headers, size: size, path: path, request: request,
                context: context)
        } catch let error as HTTPError where error.status == .notFound {
            // Deleted between the stat and the read (the sweeper, or a DELETE).
            throw Problem(.gone, code: "media_deleted", detail: Say.fileDeleted)
        }
    }

    private func respond(
        range: ByteRange, isHead: Bool, headers: HTTPFields, size: Int64, path: String,
        request: Request, context: AppRequestContext
    ) async throws -> Response {
        var headers = headers
        switch range {
        case .full:
            headers[.contentLength] = String(size)
            let body = isHead || size == 0 ? ResponseBody() : try await fileIO.loadFile(path: path, context: context)
            return Response(status: .ok, headers: headers, body: body)
        case .partial(let bytes):
            headers[.contentRange] = "bytes \(bytes.lowerBound)-\(bytes.upperBound)/\(size)"
            headers[.contentLength] = String(bytes.count)
            let body =
                isHead
                ? ResponseBody()
                : try await fileIO.loadFile(
                    path: path, range: Int(bytes.lowerBound)...Int(bytes.upperBound), context: context)
            return Response(status: .partialContent, headers: headers, body: body)
        case .unsatisfiable:
            throw Problem.rangeNotSatisfiable(request.headers[.range] ?? "", size: size)
        }
    }

    public static func httpDate(_ date: Date) -> String {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss 'GMT'"  // not for users: HTTP's date form
        return formatter.string(from: date)
    }
}
