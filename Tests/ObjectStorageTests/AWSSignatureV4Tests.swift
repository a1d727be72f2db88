import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1
import Testing

@testable import ObjectStorage

/// Expectations computed once by botocore (make_sigv4_vectors.py) and committed as sigv4_vectors.json.
struct SigV4Vectors: Decodable {
    struct Expected: Decodable {
        var url: String
        var amzDate: String?
        var authorization: String?
        var canonicalRequest: String
    }

    struct Case: Decodable, CustomTestStringConvertible {
        var name: String
        var kind: String
        var method: String
        var endpoint: String
        var region: String
        var bucket: String
        var key: String?
        var pathStyle: Bool
        var query: [[String]]?
        var headers: [[String]]?
        var payloadHash: String?
        var sessionToken: String?
        var expires: Int?
        var expected: Expected

        var testDescription: String { name }
    }

    var date: String
    var accessKeyId: String
    var secretAccessKey: String
    var cases: [Case]

    static func load() throws -> SigV4Vectors {
        let url = try #require(Bundle.module.url(forResource: "sigv4_vectors", withExtension: "json"))
        return try JSONDecoder().decode(SigV4Vectors.self, from: Data(contentsOf: url))
    }

    static let cases: [Case] = (try? load().cases) ?? []
}

/// 2026-11-23T12:00:00Z, the date the vectors were signed at.
let vectorDate = Date(timeIntervalSince1970: 1_795_435_200)

func configuration(for c: SigV4Vectors.Case, _ vectors: SigV4Vectors) -> S3Configuration {
    S3Configuration(
        endpoint: URL(string: c.endpoint)!, region: c.region, bucket: c.bucket, pathStyle: c.pathStyle,
        credentials: AWSCredentials(
            accessKeyId: vectors.accessKeyId, secretAccessKey: vectors.secretAccessKey, sessionToken: c.sessionToken))
}

@Suite("AWS Signature V4")
struct AWSSignatureV4Tests {
    @Test("the vectors file is there and dated as the tests assume")
    func vectorsLoad() throws {
        let vectors = try SigV4Vectors.load()
        #expect(vectors.cases.count >= 10)
        #expect(AWSSignatureV4.amzDate(vectorDate) == "20261123T120000Z")
        #expect(vectors.date == "2026-11-23T12:00:00Z")
    }

    @Test(
        "Authorization headers and URLs equal botocore's", arguments: SigV4Vectors.cases.filter { $0.kind == "header" })
    func headerSigningMatchesBotocore(_ c: SigV4Vectors.Case) throws {
        let vectors = try SigV4Vectors.load()
        let config = configuration(for: c, vectors)
        let request = SignableRequest(
            method: c.method, host: config.hostHeader, path: config.path(forKey: c.key),
            query: (c.query ?? []).map { ($0[0], $0[1]) }, headers: (c.headers ?? []).map { ($0[0], $0[1]) })
        #expect(config.url(request) == c.expected.url)

        let payload: PayloadHash =
            c.payloadHash == "UNSIGNED-PAYLOAD" ? .unsigned : .sha256Hex(try #require(c.payloadHash))
        let signer = AWSSignatureV4(credentials: config.credentials, region: c.region)
        let signed = signer.sign(request, payload: payload, date: vectorDate)
        #expect(signed.canonicalRequest == c.expected.canonicalRequest)
        #expect(signed.amzDate == c.expected.amzDate)
        #expect(signed.authorization == c.expected.authorization)
        let sent = Dictionary(signed.headers.map { ($0.name.lowercased(), $0.value) }, uniquingKeysWith: { a, _ in a })
        #expect(sent["x-amz-content-sha256"] == c.payloadHash)
        #expect(sent["x-amz-date"] == "20261123T120000Z")
        #expect(sent["x-amz-security-token"] == c.sessionToken)
        #expect(
            sent["host"]
                == URL(string: c.expected.url)!.host.map { h in
                    URL(string: c.expected.url)!.port.map { "\(h):\($0)" } ?? h
                })
    }

    @Test("presigned URLs equal botocore's", arguments: SigV4Vectors.cases.filter { $0.kind == "presign" })
    func presignedURLsMatchBotocore(_ c: SigV4Vectors.Case) throws {
        let vectors = try SigV4Vectors.load()
        let config = configuration(for: c, vectors)
        let url = config.presignedGetURL(
            key: try #require(c.key), expires: .seconds(try #require(c.expires)), date: vectorDate)
        #expect(url.absoluteString == c.expected.url)

        let request = SignableRequest(method: "GET", host: config.hostHeader, path: config.path(forKey: c.key))
        let (_, canonical) = AWSSignatureV4(credentials: config.credentials, region: c.region)
            .presignedQuery(request, expires: c.expires!, date: vectorDate)
        #expect(canonical == c.expected.canonicalRequest)
    }

    // AWS's published examples ("Authenticating Requests: Using the Authorization Header" and
    // "Using Query Parameters", Amazon S3 API reference): bucket examplebucket, 24 May 2013.
    static let awsExample = S3Configuration(
        endpoint: URL(string: "https://s3.amazonaws.com")!, region: "us-east-1", bucket: "examplebucket",
        pathStyle: false,
        credentials: AWSCredentials(
            accessKeyId: "AKIAIOSFODNN7EXAMPLE", secretAccessKey: "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"))
    static let awsExampleDate = Date(timeIntervalSince1970: 1_369_353_600)  // 2013-05-24T00:00:00Z

    @Test("AWS's GET object example (Range bytes=0-9) signs to the published signature")
    func awsPublishedGetObjectExample() {
        let config = Self.awsExample
        let request = SignableRequest(
            method: "GET", host: config.hostHeader, path: config.path(forKey: "test.txt"),
            headers: [("Range", "bytes=0-9")])
        #expect(request.host == "examplebucket.s3.amazonaws.com")
        let signed = AWSSignatureV4(credentials: config.credentials, region: "us-east-1")
            .sign(request, payload: .empty, date: Self.awsExampleDate)
        #expect(
            signed.authorization
                == "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request, "
                + "SignedHeaders=host;range;x-amz-content-sha256;x-amz-date, "
                + "Signature=f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41")
    }

    @Test("AWS's presigned GET example (expires 86400) has the published signature")
    func awsPublishedPresignedExample() {
        let url = Self.awsExample.presignedGetURL(key: "test.txt", expires: .seconds(86400), date: Self.awsExampleDate)
        #expect(
            url.absoluteString
                == "https://examplebucket.s3.amazonaws.com/test.txt?X-Amz-Algorithm=AWS4-HMAC-SHA256"
                + "&X-Amz-Credential=AKIAIOSFODNN7EXAMPLE%2F20130524%2Fus-east-1%2Fs3%2Faws4_request"
                + "&X-Amz-Date=20130524T000000Z&X-Amz-Expires=86400&X-Amz-SignedHeaders=host"
                + "&X-Amz-Signature=aeeed9bbccd4d02ee5c0109b86d86835f995330da4c265957d157751f604d404")
    }

    @Test("signing key derivation equals AWS's published example (20120215/us-east-1/iam)")
    func signingKeyExample() {
        let key = AWSSignatureV4.signingKey(
            secretAccessKey: "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY", dateStamp: "20120215", region: "us-east-1",
            service: "iam")
        #expect(
            key.withUnsafeBytes { Array($0) }.hexString
                == "f4780e2d9f65fa895f9c67b32ce1baf0b0d8a43505a000a1a9e090d414db404d")
    }

    @Test("URI encoding keeps unreserved characters, encodes everything else once, keeps / in paths only")
    func uriEncoding() {
        #expect(AWSSignatureV4.uriEncode("AZaz09-_.~") == "AZaz09-_.~")
        #expect(AWSSignatureV4.uriEncode("a b+c=d/e") == "a%20b%2Bc%3Dd%2Fe")
        #expect(AWSSignatureV4.uriEncode("é") == "%C3%A9")
        #expect(AWSSignatureV4.uriEncode("%20") == "%2520")
        #expect(AWSSignatureV4.canonicalURI("/b/a b/./../c//d") == "/b/a%20b/./../c//d")
        #expect(AWSSignatureV4.canonicalURI("") == "/")
        #expect(
            AWSSignatureV4.canonicalQueryString([("b", "2"), ("a", "z"), ("a", "y"), ("uploads", "")])
                == "a=y&a=z&b=2&uploads=")
    }

    @Test("headers: names lowercased, values trimmed with runs of spaces collapsed, repeats joined")
    func canonicalHeaders() {
        let (block, signed) = AWSSignatureV4.canonicalHeaders([
            ("X-Amz-Meta-A", "  one   two "), ("host", "h"), ("x-amz-meta-a", "three")
        ])
        #expect(block == "host:h\nx-amz-meta-a:one two,three\n")
        #expect(signed == "host;x-amz-meta-a")
    }

    @Test("virtual-host and path-style addressing")
    func addressing() {
        let credentials = AWSCredentials(accessKeyId: "AKIAEXAMPLE", secretAccessKey: "secret")
        var config = S3Configuration(
            endpoint: URL(string: "https://s3.eu-west-3.amazonaws.com")!, region: "eu-west-3", bucket: "media",
            pathStyle: false, credentials: credentials)
        #expect(config.hostHeader == "media.s3.eu-west-3.amazonaws.com")
        #expect(
            config.url(SignableRequest(method: "GET", host: config.hostHeader, path: config.path(forKey: "a b/c.mp4")))
                == "https://media.s3.eu-west-3.amazonaws.com/a%20b/c.mp4")
        #expect(config.path(forKey: nil) == "/")
        config.pathStyle = true
        config.endpoint = URL(string: "http://localhost:9000")!
        #expect(config.hostHeader == "localhost:9000")
        #expect(
            config.url(SignableRequest(method: "GET", host: config.hostHeader, path: config.path(forKey: "a b/c.mp4")))
                == "http://localhost:9000/media/a%20b/c.mp4")
        config.endpoint = URL(string: "https://minio.example:443")!
        #expect(config.hostHeader == "minio.example")
    }
}

@Suite("S3 configuration, errors and retries")
struct S3ConfigurationTests {
    @Test("fromEnvironment reads every variable and defaults region, endpoint and path style")
    func fromEnvironment() throws {
        let full = try S3Configuration.fromEnvironment([
            "STORAGE_S3_ENDPOINT": "https://acct.r2.cloudflarestorage.com", "STORAGE_S3_REGION": "auto",
            "STORAGE_S3_BUCKET": "media", "STORAGE_S3_PATH_STYLE": "true", "AWS_ACCESS_KEY_ID": "AKIAEXAMPLE",
            "AWS_SECRET_ACCESS_KEY": "secret", "AWS_SESSION_TOKEN": "token"
        ])
        #expect(full.endpoint.absoluteString == "https://acct.r2.cloudflarestorage.com")
        #expect(full.region == "auto")
        #expect(full.bucket == "media")
        #expect(full.pathStyle)
        #expect(
            full.credentials
                == AWSCredentials(accessKeyId: "AKIAEXAMPLE", secretAccessKey: "secret", sessionToken: "token"))

        let minimal = try S3Configuration.fromEnvironment([
            "STORAGE_S3_BUCKET": "media", "AWS_ACCESS_KEY_ID": "AKIAEXAMPLE", "AWS_SECRET_ACCESS_KEY": "secret"
        ])
        #expect(minimal.endpoint.absoluteString == "https://s3.us-east-1.amazonaws.com")
        #expect(minimal.region == "us-east-1")
        #expect(!minimal.pathStyle)
        #expect(minimal.credentials.sessionToken == nil)
    }

    @Test("fromEnvironment names the missing or invalid variable")
    func fromEnvironmentErrors() {
        #expect(throws: S3Configuration.ConfigurationError.missing("STORAGE_S3_BUCKET")) {
            try S3Configuration.fromEnvironment(["AWS_ACCESS_KEY_ID": "a", "AWS_SECRET_ACCESS_KEY": "b"])
        }
        #expect(throws: S3Configuration.ConfigurationError.missing("AWS_SECRET_ACCESS_KEY")) {
            try S3Configuration.fromEnvironment(["STORAGE_S3_BUCKET": "m", "AWS_ACCESS_KEY_ID": "a"])
        }
        #expect(throws: S3Configuration.ConfigurationError.self) {
            try S3Configuration.fromEnvironment([
                "STORAGE_S3_BUCKET": "m", "AWS_ACCESS_KEY_ID": "a", "AWS_SECRET_ACCESS_KEY": "b",
                "STORAGE_S3_PATH_STYLE": "maybe"
            ])
        }
        #expect(throws: S3Configuration.ConfigurationError.self) {
            try S3Configuration.fromEnvironment([
                "STORAGE_S3_BUCKET": "m", "AWS_ACCESS_KEY_ID": "a", "AWS_SECRET_ACCESS_KEY": "b",
                "STORAGE_S3_ENDPOINT": "ftp://x"
            ])
        }
    }

    @Test("credentials and errors never print the secret")
    func noSecretInText() {
        let credentials = AWSCredentials(
            accessKeyId: "AKIAEXAMPLE", secretAccessKey: "s3cr3t-value", sessionToken: "t0ken-value")
        #expect(!"\(credentials)".contains("s3cr3t-value"))
        #expect(!"\(credentials)".contains("t0ken-value"))
        let body =
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?><Error><Code>SignatureDoesNotMatch</Code>"
            + "<Message>The request signature we calculated does not match</Message><RequestId>R1</RequestId></Error>"
        let error = S3Client.error(
            operation: "GetObject", status: 403, body: .init(string: body), headers: [:], key: "a/b.mp4")
        #expect(
            error
                == S3Error(
                    operation: "GetObject", status: 403, code: "SignatureDoesNotMatch",
                    message: "The request signature we calculated does not match", requestId: "R1", key: "a/b.mp4"))
        #expect("\(error)".contains("SignatureDoesNotMatch"))
        #expect(!error.isRetryable)
    }

    @Test("an error body that is not XML still gives the status")
    func nonXMLErrorBody() {
        let error = S3Client.error(
            operation: "HeadObject", status: 503, body: .init(string: "oops"), headers: [:], key: nil)
        #expect(error.status == 503 && error.code == nil)
        #expect(error.isRetryable)
    }

    @Test("retries: 5xx and 429 and connection failures, never other 4xx")
    func retryClassification() {
        for status in [500, 502, 503, 504, 429] { #expect(S3Error.isRetryable(status: status)) }
        for status in [400, 401, 403, 404, 409, 412, 416] { #expect(!S3Error.isRetryable(status: status)) }
        #expect(S3Client.isTransient(S3Error(operation: "x", status: 503, code: "SlowDown")))
        #expect(!S3Client.isTransient(S3Error(operation: "x", status: 403)))
        #expect(!S3Client.isTransient(CancellationError()))
    }

    @Test("backoff doubles with half of each step random, capped")
    func backoff() {
        let policy = S3RetryPolicy(maxAttempts: 4, baseDelay: .milliseconds(200), maxDelay: .seconds(1))
        #expect(policy.delay(afterAttempt: 1, random: 0) == .milliseconds(100))
        #expect(policy.delay(afterAttempt: 1, random: 1) == .milliseconds(200))
        #expect(policy.delay(afterAttempt: 2, random: 0) == .milliseconds(200))
        #expect(policy.delay(afterAttempt: 3, random: 1) == .milliseconds(800))
        #expect(policy.delay(afterAttempt: 10, random: 1) == .seconds(1))
        #expect(S3RetryPolicy(maxAttempts: 0).maxAttempts == 1)
    }

    @Test("a refused connection is retried the bounded number of times, then reported")
    func connectionRefusedIsRetried() async throws {
        // A port nobody listens on: bind, read the port, close.
        let port = try freeLoopbackPort()
        let config = S3Configuration(
            endpoint: URL(string: "http://127.0.0.1:\(port)")!, region: "us-east-1", bucket: "b", pathStyle: true,
            credentials: AWSCredentials(accessKeyId: "AKIAEXAMPLE", secretAccessKey: "secret"),
            retry: S3RetryPolicy(maxAttempts: 3, baseDelay: .milliseconds(100)))
        // A shared HTTP client (AsyncHTTPClient keeps retrying a refused connect until its connect
        // timeout, 10 s by default; shortened here).
        var httpConfig = HTTPClient.Configuration()
        httpConfig.timeout = .init(connect: .milliseconds(300), read: .seconds(5))
        let http = HTTPClient(eventLoopGroup: HTTPClient.defaultEventLoopGroup, configuration: httpConfig)
        let client = S3Client(configuration: config, httpClient: http)
        let start = ContinuousClock.now
        let error = await #expect(throws: (any Error).self) { _ = try await client.headObject(key: "k") }
        #expect(error.map { S3Client.isTransient($0) } == true)
        // Two waits of at least 50 ms and 100 ms (half of each step is fixed), three connects.
        #expect(ContinuousClock.now - start >= .milliseconds(150))
        try await client.shutdown()  // leaves the shared client alone
        try await http.shutdown()
    }

    @Test("CompleteMultipartUpload lists the parts in order with their ETags escaped")
    func completeXML() {
        let xml = S3Client.completeMultipartUploadXML([
            S3CompletedPart(partNumber: 2, etag: "\"b\""), S3CompletedPart(partNumber: 1, etag: "\"a\"")
        ])
        #expect(
            xml == "<CompleteMultipartUpload xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">"
                + "<Part><PartNumber>1</PartNumber><ETag>&quot;a&quot;</ETag></Part>"
                + "<Part><PartNumber>2</PartNumber><ETag>&quot;b&quot;</ETag></Part></CompleteMultipartUpload>")
    }

    @Test("range headers")
    func ranges() {
        #expect(S3ByteRange.bytes(5...9).headerValue == "bytes=5-9")
        #expect(S3ByteRange.from(100).headerValue == "bytes=100-")
        #expect(S3ByteRange.suffix(4).headerValue == "bytes=-4")
    }
}

func freeLoopbackPort() throws -> Int {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    defer { close(fd) }
    var addr = sockaddr_in()
    addr.sin_family = sa_family_t(AF_INET)
    addr.sin_addr.s_addr = inet_addr("127.0.0.1")
    addr.sin_port = 0
    var len = socklen_t(MemoryLayout<sockaddr_in>.size)
    let bound = withUnsafeMutablePointer(to: &addr) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
            bind(fd, $0, len) == 0 && getsockname(fd, $0, &len) == 0
        }
    }
    guard bound else { throw POSIXError(.EADDRNOTAVAIL) }
    return Int(UInt16(bigEndian: addr.sin_port))
}
