import AsyncHTTPClient
import Foundation

/// Size, ETag, type and date of a stored object (HEAD or GET response headers).
public struct S3ObjectInfo: Sendable, Equatable {
    /// Bytes in this response: the whole object, or the requested range of a ranged GET.
    public var size: Int64
    /// The ETag as S3 sends it, quotes included.
    public var etag: String?
    public var contentType: String?
    public var lastModified: Date?
    /// `bytes 5-9/100` for a ranged GET.
    public var contentRange: String?

    public init(size: Int64, etag: String?, contentType: String?, lastModified: Date?, contentRange: String? = nil) {
        self.size = size
        self.etag = etag
        self.contentType = contentType
        self.lastModified = lastModified
        self.contentRange = contentRange
    }
}

/// One entry of a listing.
public struct S3ObjectSummary: Sendable, Equatable {
    public var key: String
    public var size: Int64
    public var etag: String?
    public var lastModified: Date?
}

/// One page of ListObjectsV2.
public struct S3ListPage: Sendable, Equatable {
    public var objects: [S3ObjectSummary]
    /// Pass to the next call to continue; nil on the last page.
    public var nextContinuationToken: String?
}

/// A part of a multipart upload as `completeMultipartUpload` needs it.
public struct S3CompletedPart: Sendable, Equatable {
    public var partNumber: Int
    public var etag: String

    public init(partNumber: Int, etag: String) {
        self.partNumber = partNumber
        self.etag = etag
    }
}

/// The `Range` of a GET.
public enum S3ByteRange: Sendable, Equatable {
    /// Bytes `first...last`, both included.
    case bytes(ClosedRange<Int64>)
    /// From an offset to the end.
    case from(Int64)
    /// The last n bytes.
    case suffix(Int64)

    public var headerValue: String {
        switch self {
        case .bytes(let r): "bytes=\(r.lowerBound)-\(r.upperBound)"
        case .from(let start): "bytes=\(start)-"
        case .suffix(let n): "bytes=-\(n)"
        }
    }
}

/// A GET whose body is still on the wire: read `body` (an async sequence of `ByteBuffer`) to the end
/// or drop it; nothing is buffered beyond what NIO holds in flight.
public struct S3ObjectStream: Sendable {
    public var info: S3ObjectInfo
    public var body: HTTPClientResponse.Body
}
