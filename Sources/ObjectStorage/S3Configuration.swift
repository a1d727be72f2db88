import Foundation

/// Where and as whom the client talks to an S3-compatible service (AWS S3, Cloudflare R2, MinIO).
public struct S3Configuration: Sendable, Equatable {
    /// `https://s3.eu-west-3.amazonaws.com`, `https://<account>.r2.cloudflarestorage.com`,
    /// `http://127.0.0.1:9000`. Scheme, host and optional port; any path is ignored.
    public var endpoint: URL
    /// Signing region: `us-east-1`, `eu-west-3`; Cloudflare R2 uses `auto`.
    public var region: String
    public var bucket: String
    /// Path style (`endpoint/bucket/key`, MinIO and local servers) or virtual host
    /// (`bucket.endpoint/key`, AWS's default).
    public var pathStyle: Bool
    public var credentials: AWSCredentials
    /// Files larger than this are uploaded in parts by `S3Client.upload(fileAt:key:contentType:)`.
    public var multipartThreshold: Int64
    /// Size of each part of a multipart upload (S3 requires at least 5 MiB except for the last part).
    public var partSize: Int64
    /// Parts of one multipart upload in flight at once (each streamed from the file).
    public var uploadConcurrency: Int
    /// Retries of 5xx, 429 and connection failures; never of other 4xx.
    public var retry: S3RetryPolicy
    /// Longest time one request (including streaming its body) may take.
    public var requestTimeout: Duration

    public static let defaultPartSize: Int64 = 16 * 1024 * 1024

    public init(
        endpoint: URL, region: String, bucket: String, pathStyle: Bool, credentials: AWSCredentials,
        multipartThreshold: Int64 = S3Configuration.defaultPartSize, partSize: Int64 = S3Configuration.defaultPartSize,
        uploadConcurrency: Int = 2, retry: S3RetryPolicy = S3RetryPolicy(), requestTimeout: Duration = .seconds(3600)
    ) {
        self.endpoint = endpoint
        self.region = region
        self.bucket = bucket
        self.pathStyle = pathStyle
        self.credentials = credentials
        self.multipartThreshold = multipartThreshold
        self.partSize = max(partSize, 5 * 1024 * 1024)
        self.uploadConcurrency = max(uploadConcurrency, 1)
        self.retry = retry
        self.requestTimeout = requestTimeout
    }

    public enum ConfigurationError: Error, Equatable, CustomStringConvertible {
        case missing(String)
        case invalid(String, reason: String)

        public var description: String {
            switch self {
            case .missing(let name): "S3 storage needs the environment variable \(name)"
            case .invalid(let name, let reason): "S3 storage: \(name) \(reason)"
            }
        }
    }

    /// Reads `STORAGE_S3_ENDPOINT` (default `https://s3.<region>.amazonaws.com`), `STORAGE_S3_REGION`
    /// (default `us-east-1`), `STORAGE_S3_BUCKET` (required), `STORAGE_S3_PATH_STYLE` (true/false,
    /// default false), `AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY` (required) and `AWS_SESSION_TOKEN`.
    public static func fromEnvironment(
        _ environment: [String: String] = ProcessInfo.processInfo.environment
    ) throws(ConfigurationError) -> S3Configuration {
        func value(_ name: String) -> String? {
            guard let v = environment[name]?.trimmingCharacters(in: .whitespaces), !v.isEmpty else { return nil }
            return v
        }
        func required(_ name: String) throws(ConfigurationError) -> String {
            guard let v = value(name) else { throw .missing(name) }
            return v
        }
        let region = value("STORAGE_S3_REGION") ?? "us-east-1"
        let endpointText = value("STORAGE_S3_ENDPOINT") ?? "https://s3.\(region).amazonaws.com"
        guard let endpoint = URL(string: endpointText), let scheme = endpoint.scheme?.lowercased(),
            scheme == "http" || scheme == "https", let host = endpoint.host, !host.isEmpty
        else {
            throw .invalid(
                "STORAGE_S3_ENDPOINT", reason: "must be an http(s) URL such as https://s3.us-east-1.amazonaws.com")
        }
        let bucket = try required("STORAGE_S3_BUCKET")
        var pathStyle = false
        if let text = value("STORAGE_S3_PATH_STYLE") {
            switch text.lowercased() {
            case "1", "true", "yes", "on": pathStyle = true
            case "0", "false", "no", "off": pathStyle = false
            default: throw .invalid("STORAGE_S3_PATH_STYLE", reason: "must be true or false")
            }
        }
        let credentials = AWSCredentials(
            accessKeyId: try required("AWS_ACCESS_KEY_ID"),
            secretAccessKey: try required("AWS_SECRET_ACCESS_KEY"),
            sessionToken: value("AWS_SESSION_TOKEN"))
        return S3Configuration(
            endpoint: endpoint, region: region, bucket: bucket, pathStyle: pathStyle, credentials: credentials)
    }

    // MARK: Addressing

    var scheme: String { endpoint.scheme?.lowercased() ?? "https" }

    /// The `Host` header for requests: the bucket is prepended in virtual-host style; the port is kept
    /// only when it is not the scheme's default.
    var hostHeader: String {
        var host = endpoint.host ?? ""
        if host.contains(":") && !host.hasPrefix("[") { host = "[\(host)]" }  // IPv6 literal
        if !pathStyle { host = "\(bucket).\(host)" }
        if let port = endpoint.port, !(scheme == "http" && port == 80), !(scheme == "https" && port == 443) {
            host += ":\(port)"
        }
        return host
    }

    /// The decoded request path for a key (or the bucket itself when `key` is nil).
    func path(forKey key: String?) -> String {
        switch (pathStyle, key) {
        case (true, nil): "/\(bucket)"
        case (true, let key?): "/\(bucket)/\(key)"
        case (false, nil): "/"
        case (false, let key?): "/\(key)"
        }
    }

    /// The full URL of a request whose path and query are already encoded.
    func url(_ request: SignableRequest) -> String {
        "\(scheme)://\(request.host)\(request.encodedPathAndQuery)"
    }

    /// A presigned GET URL for a key (see `S3Client.presignedGetURL`).
    func presignedGetURL(key: String, expires: Duration, date: Date) -> URL {
        let request = SignableRequest(method: "GET", host: hostHeader, path: path(forKey: key))
        let signer = AWSSignatureV4(credentials: credentials, region: region)
        let (query, _) = signer.presignedQuery(request, expires: Int(expires.components.seconds), date: date)
        return URL(string: "\(scheme)://\(request.host)\(request.encodedPath)?\(query)")!
    }
}
