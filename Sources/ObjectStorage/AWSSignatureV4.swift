import Crypto
import Foundation

/// Credentials for AWS Signature Version 4. The secret never appears in `description`.
public struct AWSCredentials: Sendable, Equatable, CustomStringConvertible {
    public var accessKeyId: String
    public var secretAccessKey: String
    public var sessionToken: String?

    public init(accessKeyId: String, secretAccessKey: String, sessionToken: String? = nil) {
        self.accessKeyId = accessKeyId
        self.secretAccessKey = secretAccessKey
        self.sessionToken = sessionToken
    }

    public var description: String {
        "AWSCredentials(accessKeyId: \(accessKeyId), secretAccessKey: <redacted>\(sessionToken == nil ? "" : ", sessionToken: <redacted>"))"
    }
}

/// What goes into `x-amz-content-sha256` and the last line of the canonical request.
public enum PayloadHash: Sendable, Equatable {
    /// `UNSIGNED-PAYLOAD`: the body is not part of the signature (streamed uploads).
    case unsigned
    /// The lowercase hex SHA-256 of the body.
    case sha256Hex(String)

    /// The hash of an empty body.
    public static let empty = PayloadHash.sha256Hex("e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")

    /// The hash of the given bytes.
    public static func of(_ bytes: some DataProtocol) -> PayloadHash {
        .sha256Hex(SHA256.hash(data: bytes).hexString)
    }

    public var headerValue: String {
        switch self {
        case .unsigned: "UNSIGNED-PAYLOAD"
        case .sha256Hex(let hex): hex
        }
    }
}

/// One HTTP request as the signer sees it: nothing percent-encoded yet. The signer and the URL the
/// client sends use the same encoding (`encodedPath`, `encodedQuery`), so what is signed is what is sent.
public struct SignableRequest: Sendable, Equatable {
    public var method: String
    /// The `Host` header as sent: `host` or `host:port` (the port only when it is not the scheme's default).
    public var host: String
    /// The decoded path, starting with `/`: `/bucket/key with spaces` or `/key`.
    public var path: String
    /// Decoded query parameters in the order they are sent; `("uploads", "")` is sent as `uploads=`.
    public var query: [(name: String, value: String)]
    /// Headers to sign besides `host` and the ones the signer adds (`x-amz-*`).
    public var headers: [(name: String, value: String)]

    public init(
        method: String, host: String, path: String,
        query: [(name: String, value: String)] = [], headers: [(name: String, value: String)] = []
    ) {
        self.method = method
        self.host = host
        self.path = path
        self.query = query
        self.headers = headers
    }

    /// The path as sent on the wire: every segment encoded once, `/` kept.
    public var encodedPath: String { AWSSignatureV4.canonicalURI(path) }

    /// The query as sent on the wire, in the given order; empty when there is no query.
    public var encodedQuery: String {
        query.map { AWSSignatureV4.uriEncode($0.name) + "=" + AWSSignatureV4.uriEncode($0.value) }
            .joined(separator: "&")
    }

    /// Path plus `?query` when there is one.
    public var encodedPathAndQuery: String {
        let q = encodedQuery
        return q.isEmpty ? encodedPath : encodedPath + "?" + q
    }

    public static func == (lhs: SignableRequest, rhs: SignableRequest) -> Bool {
        lhs.method == rhs.method && lhs.host == rhs.host && lhs.path == rhs.path
            && lhs.query.elementsEqual(rhs.query, by: { $0 == $1 })
            && lhs.headers.elementsEqual(rhs.headers, by: { $0 == $1 })
    }
}

/// AWS Signature Version 4 for S3 (header and query-string/presigned forms). Pure: no I/O, and the
/// signing time is always passed in.
public struct AWSSignatureV4: Sendable {
    public static let algorithm = "AWS4-HMAC-SHA256"

    public var credentials: AWSCredentials
    public var region: String
    public var service: String

    public init(credentials: AWSCredentials, region: String, service: String = "s3") {
        self.credentials = credentials
        self.region = region
        self.service = service
    }

    // MARK: Encoding

    /// S3's URI encoding: every byte of the UTF-8 form except the unreserved characters
    /// `A-Z a-z 0-9 - _ . ~` becomes `%XX` (uppercase hex); `/` is kept only when `keepSlash` is set.
    public static func uriEncode(_ string: String, keepSlash: Bool = false) -> String {
        var out = [UInt8]()
        out.reserveCapacity(string.utf8.count)
        let hex = Array("0123456789ABCDEF".utf8)
        for byte in string.utf8 {
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "_"),
                UInt8(ascii: "."), UInt8(ascii: "~"):
                out.append(byte)
            case UInt8(ascii: "/") where keepSlash:
                out.append(byte)
            default:
                out.append(UInt8(ascii: "%"))
                out.append(hex[Int(byte >> 4)])
                out.append(hex[Int(byte & 0x0F)])
            }
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// The canonical URI of S3: the path encoded once (no normalisation of `.`, `..` or `//`, which
    /// are legal in keys), `/` kept; an empty path is `/`.
    public static func canonicalURI(_ path: String) -> String {
        path.isEmpty ? "/" : uriEncode(path, keepSlash: true)
    }

    /// Query parameters encoded and sorted by encoded name, then by encoded value.
    public static func canonicalQueryString(_ query: [(name: String, value: String)]) -> String {
        let encoded: [(name: String, value: String)] = query.map { (uriEncode($0.name), uriEncode($0.value)) }
        let sorted = encoded.sorted { a, b in a.name == b.name ? a.value < b.value : a.name < b.name }
        return sorted.map { pair in pair.name + "=" + pair.value }.joined(separator: "&")
    }

    // MARK: Dates

    /// `yyyyMMdd'T'HHmmss'Z'` in UTC.
    public static func amzDate(_ date: Date) -> String {
        var seconds = time_t(date.timeIntervalSince1970.rounded(.down))
        var parts = tm()
        gmtime_r(&seconds, &parts)
        func two(_ v: Int32) -> String { v < 10 ? "0\(v)" : "\(v)" }
        let year = String(parts.tm_year + 1900)
        let day: String = year + two(parts.tm_mon + 1) + two(parts.tm_mday)
        let time: String = two(parts.tm_hour) + two(parts.tm_min) + two(parts.tm_sec)
        return day + "T" + time + "Z"
    }

    /// `date/region/service/aws4_request` for the day of `amzDate`.
    public func credentialScope(amzDate: String) -> String {
        "\(amzDate.prefix(8))/\(region)/\(service)/aws4_request"
    }

    // MARK: Steps

    /// Canonical headers (lowercased names, values trimmed with inner runs of spaces collapsed,
    /// repeated names joined by `,`, sorted) and the `;`-joined signed header names.
    public static func canonicalHeaders(_ headers: [(name: String, value: String)]) -> (block: String, signed: String) {
        var byName: [String: [String]] = [:]
        for (name, value) in headers {
            let trimmed = value.split(whereSeparator: { $0 == " " || $0 == "\t" }).joined(separator: " ")
            byName[name.lowercased(), default: []].append(trimmed)
        }
        let names = byName.keys.sorted()
        let block = names.map { "\($0):\(byName[$0]!.joined(separator: ","))\n" }.joined()
        return (block, names.joined(separator: ";"))
    }

    /// The canonical request for headers that already include `host` and the `x-amz-*` headers.
    public static func canonicalRequest(
        method: String, path: String, query: [(name: String, value: String)],
        headers: [(name: String, value: String)], payloadHash: String
    ) -> (canonicalRequest: String, signedHeaders: String) {
        let (block, signed) = canonicalHeaders(headers)
        let text = [
            method.uppercased(), canonicalURI(path), canonicalQueryString(query), block, signed, payloadHash
        ].joined(separator: "\n")
        return (text, signed)
    }

    /// `AWS4-HMAC-SHA256\n<amzDate>\n<scope>\n<hex sha256 of the canonical request>`.
    public func stringToSign(canonicalRequest: String, amzDate: String) -> String {
        [
            Self.algorithm, amzDate, credentialScope(amzDate: amzDate),
            SHA256.hash(data: Data(canonicalRequest.utf8)).hexString
        ].joined(separator: "\n")
    }

    /// HMAC chain `AWS4<secret>` → date → region → service → `aws4_request`.
    public static func signingKey(secretAccessKey: String, dateStamp: String, region: String, service: String)
        -> SymmetricKey
    {
        func hmac(_ key: SymmetricKey, _ message: String) -> SymmetricKey {
            SymmetricKey(data: Data(HMAC<SHA256>.authenticationCode(for: Data(message.utf8), using: key)))
        }
        let kSecret = SymmetricKey(data: Data("AWS4\(secretAccessKey)".utf8))
        return hmac(hmac(hmac(hmac(kSecret, dateStamp), region), service), "aws4_request")
    }

    /// Lowercase hex HMAC-SHA256 of the string to sign with the derived key.
    public func signature(stringToSign: String, amzDate: String) -> String {
        let key = Self.signingKey(
            secretAccessKey: credentials.secretAccessKey, dateStamp: String(amzDate.prefix(8)),
            region: region, service: service)
        return Data(HMAC<SHA256>.authenticationCode(for: Data(stringToSign.utf8), using: key)).hexString
    }

    // MARK: Header signing

    /// The result of signing: every header to send (the request's own, `host`, the `x-amz-*` ones and
    /// `authorization`), plus the intermediate texts for diagnosis.
    public struct SignedRequest: Sendable {
        public var headers: [(name: String, value: String)]
        public var authorization: String
        public var amzDate: String
        public var canonicalRequest: String
        public var stringToSign: String
    }

    /// Signs with an `Authorization` header, adding `x-amz-date`, `x-amz-content-sha256` and, with a
    /// session token, `x-amz-security-token`.
    public func sign(_ request: SignableRequest, payload: PayloadHash, date: Date) -> SignedRequest {
        let amzDate = Self.amzDate(date)
        var headers = request.headers.filter {
            let n = $0.name.lowercased()
            return n != "host" && n != "authorization" && n != "x-amz-date" && n != "x-amz-content-sha256"
                && n != "x-amz-security-token"
        }
        headers.append(("host", request.host))
        headers.append(("x-amz-content-sha256", payload.headerValue))
        headers.append(("x-amz-date", amzDate))
        if let token = credentials.sessionToken {
            headers.append(("x-amz-security-token", token))
        }
        let (canonical, signed) = Self.canonicalRequest(
            method: request.method, path: request.path, query: request.query, headers: headers,
            payloadHash: payload.headerValue)
        let toSign = stringToSign(canonicalRequest: canonical, amzDate: amzDate)
        let authorization =
            "\(Self.algorithm) Credential=\(credentials.accessKeyId)/\(credentialScope(amzDate: amzDate)), "
            + "SignedHeaders=\(signed), Signature=\(signature(stringToSign: toSign, amzDate: amzDate))"
        headers.append(("authorization", authorization))
        return SignedRequest(
            headers: headers, authorization: authorization, amzDate: amzDate, canonicalRequest: canonical,
            stringToSign: toSign)
    }

    // MARK: Presigned URLs

    /// The query of a presigned request (`X-Amz-*` parameters after the request's own, signature last),
    /// encoded; only `host` is signed and the payload is `UNSIGNED-PAYLOAD`.
    /// - Parameter expires: seconds the URL stays valid, 1...604800.
    public func presignedQuery(_ request: SignableRequest, expires: Int, date: Date) -> (
        query: String, canonicalRequest: String
    ) {
        let amzDate = Self.amzDate(date)
        var auth: [(name: String, value: String)] = [
            ("X-Amz-Algorithm", Self.algorithm),
            ("X-Amz-Credential", "\(credentials.accessKeyId)/\(credentialScope(amzDate: amzDate))"),
            ("X-Amz-Date", amzDate),
            ("X-Amz-Expires", String(min(max(expires, 1), 604_800))),
            ("X-Amz-SignedHeaders", "host")
        ]
        if let token = credentials.sessionToken {
            auth.append(("X-Amz-Security-Token", token))
        }
        let all = request.query + auth
        let (canonical, _) = Self.canonicalRequest(
            method: request.method, path: request.path, query: all, headers: [("host", request.host)],
            payloadHash: PayloadHash.unsigned.headerValue)
        let sig = signature(stringToSign: stringToSign(canonicalRequest: canonical, amzDate: amzDate), amzDate: amzDate)
        var unsignedRequest = request
        unsignedRequest.query = all + [("X-Amz-Signature", sig)]
        return (unsignedRequest.encodedQuery, canonical)
    }
}

extension Sequence where Element == UInt8 {
    var hexString: String {
        let hex = Array("0123456789abcdef".utf8)
        var out = [UInt8]()
        for b in self {
            out.append(hex[Int(b >> 4)])
            out.append(hex[Int(b & 0x0F)])
        }
        return String(decoding: out, as: UTF8.self)
    }
}
