import AsyncHTTPClient
import Foundation
import Logging
import NIOCore
import NIOHTTP1
import NIOPosix
import _NIOFileSystem

/// A small S3 client (AWS S3, Cloudflare R2, MinIO) on AsyncHTTPClient: objects are streamed from
/// and to files, never held whole in memory. Requests are signed with SigV4; 5xx, 429 and
/// connection failures are retried with backoff, other 4xx are not.
///
///     let s3 = S3Client(configuration: try S3Configuration.fromEnvironment())
///     try await s3.upload(fileAt: "/data/out.mp4", key: "highlights/abc.mp4", contentType: "video/mp4")
///     let url = s3.presignedGetURL(key: "highlights/abc.mp4", expires: .seconds(900))
///     try await s3.shutdown()   // required when the client created its own HTTPClient
///
/// An S3Client that owns its HTTPClient must be shut down before it is released (AsyncHTTPClient
/// traps in debug builds otherwise); one given a shared HTTPClient leaves it to its owner.
public final class S3Client: Sendable {
    public let configuration: S3Configuration
    let httpClient: HTTPClient
    private let ownsHTTPClient: Bool
    private let signer: AWSSignatureV4
    let logger: Logger
    private let now: @Sendable () -> Date

    /// - Parameters:
    ///   - httpClient: a shared client (its owner shuts it down); nil creates one that `shutdown()` closes.
    ///   - now: the signing clock (tests inject a fixed date).
    public init(
        configuration: S3Configuration, httpClient: HTTPClient? = nil,
        logger: Logger = Logger(label: "moments.s3"), now: @escaping @Sendable () -> Date = { Date() }
    ) {
        self.configuration = configuration
        if let httpClient {
            self.httpClient = httpClient
            self.ownsHTTPClient = false
        } else {
            var config = HTTPClient.Configuration()
            config.redirectConfiguration = .disallow
            config.timeout = .init(connect: .seconds(10), read: .seconds(60))
            config.decompression = .disabled
            self.httpClient = HTTPClient(eventLoopGroup: HTTPClient.defaultEventLoopGroup, configuration: config)
            self.ownsHTTPClient = true
        }
        self.signer = AWSSignatureV4(credentials: configuration.credentials, region: configuration.region)
        self.logger = logger
        self.now = now
    }

    /// Closes the HTTP client when this client created it; a shared one is left alone.
    public func shutdown() async throws {
        if ownsHTTPClient { try await httpClient.shutdown() }
    }

    // MARK: Objects

    /// Creates the configured bucket; succeeds when it already exists and is ours.
    public func createBucket() async throws {
        var body = ByteBuffer()
        var payload = PayloadHash.empty
        if configuration.region != "us-east-1" && configuration.region != "auto" {
            let xml =
                "<CreateBucketConfiguration xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">"
                + "<LocationConstraint>\(xmlEscape(configuration.region))</LocationConstraint></CreateBucketConfiguration>"
            body = ByteBuffer(string: xml)
            payload = .of(Array(xml.utf8))
        }
        do {
            try await send("CreateBucket", .PUT, key: nil, body: .bytes(body), payload: payload) { response in
                try await discard(response)
            }
        } catch let error as S3Error where error.code == "BucketAlreadyOwnedByYou" {
            return
        }
    }

    /// Uploads a file in one request, streamed from disk. Returns the ETag.
    @discardableResult
    public func putObject(key: String, fileAt path: String, contentType: String? = nil) async throws -> String {
        let size = try await fileSize(path)
        return try await send(
            "PutObject", .PUT, key: key, headers: contentTypeHeader(contentType),
            body: .file(FilePath(path), 0..<size), payload: .unsigned
        ) { response in
            try await discard(response)
            return try etag(response, "PutObject", key)
        }
    }

    /// Uploads `range` of a file in one request, streamed from disk (a resumable upload's part).
    @discardableResult
    public func putObject(key: String, fileAt path: String, range: Range<Int64>, contentType: String? = nil)
        async throws -> String
    {
        try await send(
            "PutObject", .PUT, key: key, headers: contentTypeHeader(contentType),
            body: .file(FilePath(path), range), payload: .unsigned
        ) { response in
            try await discard(response)
            return try etag(response, "PutObject", key)
        }
    }

    /// Uploads bytes held in memory (small objects: manifests, JSON). Returns the ETag.
    @discardableResult
    public func putObject(key: String, bytes: [UInt8], contentType: String? = nil) async throws -> String {
        try await send(
            "PutObject", .PUT, key: key, headers: contentTypeHeader(contentType),
            body: .bytes(ByteBuffer(bytes: bytes)), payload: .of(bytes)
        ) { response in
            try await discard(response)
            return try etag(response, "PutObject", key)
        }
    }

    /// Copies an object of the bucket to another key, server-side (CopyObject: up to 5 GB), so a
    /// re-cut shares its original's input without the bytes passing through this host.
    public func copyObject(from source: String, to key: String) async throws {
        let copySource =
            "/" + AWSSignatureV4.uriEncode(configuration.bucket) + "/"
            + AWSSignatureV4.uriEncode(source, keepSlash: true)
        try await send("CopyObject", .PUT, key: key, headers: [(name: "x-amz-copy-source", value: copySource)]) {
            response in
            // S3 may answer 200 and report a failure in the body.
            let body = try await Self.collectPrefix(response.body, limit: 64 * 1024)
            if S3XMLNode.parse(Data(body.readableBytesView))?.name == "Error" {
                throw Self.error(operation: "CopyObject", status: 200, body: body, headers: response.headers, key: key)
            }
        }
    }

    /// Size, ETag, type and date of an object; nil when it does not exist.
    public func headObject(key: String) async throws -> S3ObjectInfo? {
        try await send("HeadObject", .HEAD, key: key, accept: { $0 == 200 || $0 == 404 }) { response in
            response.status.code == 404 ? nil : objectInfo(response.headers)
        }
    }

    /// Starts a GET and returns once the headers are in; the caller streams `body`.
    /// Retries cover the request up to its headers, not the body.
    public func getObject(key: String, range: S3ByteRange? = nil) async throws -> S3ObjectStream {
        try await send("GetObject", .GET, key: key, headers: rangeHeader(range)) { response in
            S3ObjectStream(info: objectInfo(response.headers), body: response.body)
        }
    }

    /// Downloads an object (or a range of it) to a file, chunk by chunk. The file appears only
    /// complete: a failed download leaves nothing at `path`. Retried as a whole on transient failures.
    @discardableResult
    public func getObject(key: String, range: S3ByteRange? = nil, toFileAt path: String) async throws -> S3ObjectInfo {
        try await send("GetObject", .GET, key: key, headers: rangeHeader(range)) { response in
            let info = objectInfo(response.headers)
            let written = try await FileSystem.shared.withFileHandle(
                forWritingAt: FilePath(path), options: .newFile(replaceExisting: true)
            ) { file in
                var offset: Int64 = 0
                for try await chunk in response.body {
                    offset += try await file.write(contentsOf: chunk, toAbsoluteOffset: offset)
                }
                if response.headers.first(name: "content-length") != nil, offset != info.size {
                    throw S3Error(
                        operation: "GetObject", status: Int(response.status.code), code: "IncompleteBody",
                        message: "received \(offset) of \(info.size) bytes", key: key)
                }
                return offset
            }
            var result = info
            result.size = written
            return result
        }
    }

    /// Deletes an object; deleting one that does not exist is not an error.
    public func deleteObject(key: String) async throws {
        try await send("DeleteObject", .DELETE, key: key, accept: { [200, 204, 404].contains($0) }) { response in
            try await discard(response)
        }
    }

    /// One page of ListObjectsV2.
    public func listObjectsPage(prefix: String? = nil, continuationToken: String? = nil, maxKeys: Int? = nil)
        async throws -> S3ListPage
    {
        var query: [(name: String, value: String)] = [("list-type", "2")]
        if let prefix { query.append(("prefix", prefix)) }
        if let continuationToken { query.append(("continuation-token", continuationToken)) }
        if let maxKeys { query.append(("max-keys", String(maxKeys))) }
        return try await send("ListObjectsV2", .GET, key: nil, query: query) { response in
            let root = try await xmlBody(response, "ListObjectsV2")
            let objects = root.children("Contents").map { entry in
                S3ObjectSummary(
                    key: entry.string("Key") ?? "", size: Int64(entry.string("Size") ?? "") ?? 0,
                    etag: entry.string("ETag"), lastModified: entry.string("LastModified").flatMap(parseISO8601))
            }
            let truncated = root.string("IsTruncated") == "true"
            let token = truncated ? root.string("NextContinuationToken") : nil
            if truncated && token == nil {
                throw S3Error(
                    operation: "ListObjectsV2", status: 200, code: "InvalidResponse",
                    message: "truncated listing without a continuation token")
            }
            return S3ListPage(objects: objects, nextContinuationToken: token)
        }
    }

    /// Every object under a prefix, following continuation tokens (`pageSize` keys per request).
    public func listObjects(prefix: String? = nil, pageSize: Int? = nil) async throws -> [S3ObjectSummary] {
        var all: [S3ObjectSummary] = []
        var token: String?
        repeat {
            let page = try await listObjectsPage(prefix: prefix, continuationToken: token, maxKeys: pageSize)
            all += page.objects
            token = page.nextContinuationToken
        } while token != nil
        return all
    }

    // MARK: Presigned URLs

    /// A URL anyone can GET until it expires (at most 7 days), signed for `host` only.
    public func presignedGetURL(key: String, expires: Duration = .seconds(3600), date: Date? = nil) -> URL {
        configuration.presignedGetURL(key: key, expires: expires, date: date ?? now())
    }

    /// The URL a request for `key` (or the bucket) goes to, with the query encoded as sent.
    public func url(forKey key: String?, query: [(name: String, value: String)] = []) -> String {
        configuration.url(
            SignableRequest(
                method: "GET", host: configuration.hostHeader, path: configuration.path(forKey: key), query: query))
    }

    // MARK: Transport

    enum RequestBody {
        case bytes(ByteBuffer)
        case file(FilePath, Range<Int64>)
        case none
    }

    /// Signs and sends one request, retrying transient failures; `handle` runs on an accepted status
    /// and may itself throw a retryable error (a dropped connection while reading the body).
    func send<T>(
        _ operation: String, _ method: HTTPMethod, key: String?, query: [(name: String, value: String)] = [],
        headers: [(name: String, value: String)] = [], body: RequestBody = .none, payload: PayloadHash = .empty,
        accept: @escaping (Int) -> Bool = { (200..<300).contains($0) },
        _ handle: @escaping (HTTPClientResponse) async throws -> T
    ) async throws -> T {
        if let key, key.isEmpty || key.utf8.count > 1024 {
            // An empty key would address the bucket itself (DELETE /bucket/ deletes the bucket).
            throw S3Error(
                operation: operation, status: 0, code: "InvalidObjectKey",
                message: "an object key must be 1 to 1024 bytes")
        }
        let policy = configuration.retry
        var attempt = 1
        while true {
            do {
                return try await sendOnce(
                    operation, method, key: key, query: query, headers: headers, body: body, payload: payload,
                    accept: accept, handle)
            } catch {
                guard attempt < policy.maxAttempts, Self.isTransient(error), !Task.isCancelled else { throw error }
                let delay = policy.delay(afterAttempt: attempt)
                logger.notice(
                    "S3 request failed, retrying",
                    metadata: [
                        "operation": "\(operation)", "attempt": "\(attempt)", "error": "\(error)", "delay": "\(delay)"
                    ])
                try await Task.sleep(for: delay)
                attempt += 1
            }
        }
    }

    private func sendOnce<T>(
        _ operation: String, _ method: HTTPMethod, key: String?, query: [(name: String, value: String)],
        headers: [(name: String, value: String)], body: RequestBody, payload: PayloadHash,
        accept: @escaping (Int) -> Bool, _ handle: @escaping (HTTPClientResponse) async throws -> T
    ) async throws -> T {
        let request = SignableRequest(
            method: method.rawValue, host: configuration.hostHeader, path: configuration.path(forKey: key),
            query: query, headers: headers)
        let signed = signer.sign(request, payload: payload, date: now())
        var http = HTTPClientRequest(url: configuration.url(request))
        http.method = method
        for (name, value) in signed.headers { http.headers.add(name: name, value: value) }
        let deadline = NIODeadline.now() + TimeAmount(configuration.requestTimeout)

        func run(_ http: HTTPClientRequest) async throws -> T {
            let response = try await httpClient.execute(http, deadline: deadline, logger: nil)
            let status = Int(response.status.code)
            if accept(status) { return try await handle(response) }
            let errorBody = try await Self.collectPrefix(response.body, limit: 64 * 1024)
            throw Self.error(operation: operation, status: status, body: errorBody, headers: response.headers, key: key)
        }

        switch body {
        case .none:
            return try await run(http)
        case .bytes(let buffer):
            http.body = .bytes(buffer)
            return try await run(http)
        case .file(let path, let range):
            return try await FileSystem.shared.withFileHandle(forReadingAt: path) { file in
                var http = http
                http.body = .stream(
                    file.readChunks(in: range, chunkLength: .kibibytes(256)), length: .known(Int64(range.count)))
                return try await run(http)
            }
        }
    }

    /// Transient: a retryable S3 status, or the connection failing (refused, reset, timed out, a
    /// response cut short).
    static func isTransient(_ error: any Error) -> Bool {
        switch error {
        case let error as S3Error: error.isRetryable
        case is HTTPClientError, is NIOConnectionError, is ChannelError, is IOError, is HTTPParserError: true
        default: false
        }
    }

    static func collectPrefix(_ body: HTTPClientResponse.Body, limit: Int) async throws -> ByteBuffer {
        var collected = ByteBuffer()
        for try await var chunk in body where collected.readableBytes < limit {
            let take = min(chunk.readableBytes, limit - collected.readableBytes)
            if let slice = chunk.readSlice(length: take) { collected.writeImmutableBuffer(slice) }
        }
        return collected
    }

    /// The error of a non-accepted response; S3's XML error body gives the code and message.
    static func error(operation: String, status: Int, body: ByteBuffer, headers: HTTPHeaders, key: String?) -> S3Error {
        let root = S3XMLNode.parse(Data(body.readableBytesView))
        let isError = root?.name == "Error"
        return S3Error(
            operation: operation, status: status, code: isError ? root?.string("Code") : nil,
            message: isError ? root?.string("Message") : nil,
            requestId: (isError ? root?.string("RequestId") : nil) ?? headers.first(name: "x-amz-request-id"),
            key: key)
    }

    // MARK: Helpers

    func fileSize(_ path: String) async throws -> Int64 {
        guard let info = try await FileSystem.shared.info(forFileAt: FilePath(path)) else {
            throw S3Error(
                operation: "ReadFile", status: 0, code: "NoSuchFile", message: "the file to upload does not exist")
        }
        return info.size
    }

    func contentTypeHeader(_ contentType: String?) -> [(name: String, value: String)] {
        contentType.map { [("content-type", $0)] } ?? []
    }

    private func rangeHeader(_ range: S3ByteRange?) -> [(name: String, value: String)] {
        range.map { [("range", $0.headerValue)] } ?? []
    }
}

func etag(_ response: HTTPClientResponse, _ operation: String, _ key: String) throws -> String {
    guard let etag = response.headers.first(name: "etag") else {
        throw S3Error(
            operation: operation, status: Int(response.status.code), code: "InvalidResponse", message: "no ETag",
            key: key)
    }
    return etag
}

/// Reads a body nobody needs to its end so the connection can be reused.
func discard(_ response: HTTPClientResponse) async throws {
    for try await _ in response.body {}
}

func xmlBody(_ response: HTTPClientResponse, _ operation: String) async throws -> S3XMLNode {
    let body = try await response.body.collect(upTo: 16 * 1024 * 1024)
    guard let root = S3XMLNode.parse(Data(body.readableBytesView)) else {
        throw S3Error(
            operation: operation, status: Int(response.status.code), code: "InvalidResponse",
            message: "the response is not XML")
    }
    return root
}

func objectInfo(_ headers: HTTPHeaders) -> S3ObjectInfo {
    S3ObjectInfo(
        size: headers.first(name: "content-length").flatMap { Int64($0) } ?? 0,
        etag: headers.first(name: "etag"),
        contentType: headers.first(name: "content-type"),
        lastModified: headers.first(name: "last-modified").flatMap(parseHTTPDate),
        contentRange: headers.first(name: "content-range"))
}

/// `Wed, 12 Oct 2009 17:50:00 GMT`
func parseHTTPDate(_ text: String) -> Date? {
    let formatter = DateFormatter()
    formatter.locale = Locale(identifier: "en_US_POSIX")
    formatter.timeZone = TimeZone(identifier: "GMT")
    formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss zzz"
    return formatter.date(from: text)
}

/// `2009-10-12T17:50:30.000Z` (fractional seconds optional).
func parseISO8601(_ text: String) -> Date? {
    let formatter = ISO8601DateFormatter()
    formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
    if let date = formatter.date(from: text) { return date }
    formatter.formatOptions = [.withInternetDateTime]
    return formatter.date(from: text)
}
