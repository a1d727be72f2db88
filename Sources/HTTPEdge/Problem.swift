import Foundation
import HTTPTypes
import Hummingbird
import Store
import Wording

/// An RFC 9457 problem: every 4xx and 5xx body is one, as application/problem+json, with a detail
/// that tells the user what to do.
public struct Problem: Error, HTTPResponseError, Sendable {
    public var status: HTTPResponse.Status
    /// Stable, machine-readable name; the `type` URI ends with it.
    public var code: String
    public var title: String
    public var detail: String
    /// Extension members (RFC 9457 §3.2), e.g. the job's status for a 409.
    public var extensions: [String: ProblemValue] = [:]
    public var headers: HTTPFields = [:]

    public init(
        _ status: HTTPResponse.Status, code: String, title: String? = nil, detail: String,
        extensions: [String: ProblemValue] = [:], headers: HTTPFields = [:]
    ) {
        self.status = status
        self.code = code
        self.title = title ?? (status.reasonPhrase.isEmpty ? Self.titles[status.code] ?? "Error" : status.reasonPhrase)
        self.detail = detail
        self.extensions = extensions
        self.headers = headers
    }

    public static let titles: [Int: String] = [
        400: "Bad Request", 401: "Unauthorized", 402: "Payment Required", 403: "Forbidden", 404: "Not Found",
        409: "Conflict", 410: "Gone", 413: "Content Too Large",
        415: "Unsupported Media Type", 416: "Range Not Satisfiable", 422: "Unprocessable Content",
        429: "Too Many Requests",
        500: "Internal Server Error", 503: "Service Unavailable", 507: "Insufficient Storage"
    ]

    public static let typeBase = "https://moments.app/problems/"

    public func response(from request: Request, context: some RequestContext) throws -> Response {
        var object: [String: ProblemValue] = extensions
        var detail = self.detail
        // Last line of defence: nothing about the server's files or its FFmpeg leaves in a body.
        if ProblemScrubber.leaks(detail) {
            let cleaned = ProblemScrubber.withoutLeakingAsides(detail)
            context.logger.warning(
                "problem detail withheld from the client", metadata: ["code": "\(code)", "detail": "\(detail)"])
            detail = ProblemScrubber.leaks(cleaned) ? ProblemScrubber.generic(status) : cleaned
        }
        for (key, value) in object {
            if case .string(let text) = value, ProblemScrubber.leaks(text) {
                context.logger.warning(
                    "problem member withheld from the client",
                    metadata: ["code": "\(code)", "member": "\(key)", "value": "\(text)"])
                object[key] = nil
            }
        }
        object["type"] = .string(Self.typeBase + code)
        object["title"] = .string(title)
        object["status"] = .int(Int(status.code))
        object["detail"] = .string(detail)
        object["instance"] = .string(request.uri.path)
        if let id = context.logger[metadataKey: RequestIDPolicy.metadataKey] { object["request_id"] = .string("\(id)") }
        var data = try Self.encoder.encode(object)
        data.append(0x0A)
        var headers = self.headers
        headers[.contentType] = "application/problem+json"
        return Response(status: status, headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: data)))
    }

    public static let encoder: JSONEncoder = {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return encoder
    }()
}

/// A JSON value in a problem's extension members.
public enum ProblemValue: Encodable, Sendable, Equatable {
    case string(String), int(Int), double(Double), bool(Bool), strings([String])

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.singleValueContainer()
        switch self {
        case .string(let v): try c.encode(v)
        case .int(let v): try c.encode(v)
        case .double(let v): try c.encode(v)
        case .bool(let v): try c.encode(v)
        case .strings(let v): try c.encode(v)
        }
    }
}

extension Problem {
    public static func badRequest(_ code: String, _ detail: String, extensions: [String: ProblemValue] = [:]) -> Problem {
        Problem(.badRequest, code: code, detail: detail, extensions: extensions)
    }

    /// A Range no byte of a `size`-byte file satisfies (files on disk and objects in a bucket alike).
    public static func rangeNotSatisfiable(_ range: String, size: Int64) -> Problem {
        Problem(
            .rangeNotSatisfiable, code: "range_not_satisfiable", detail: Say.rangeNotSatisfiable(range, size: size),
            extensions: ["size": .int(Int(size))], headers: [.contentRange: "bytes */\(size)", .acceptRanges: "bytes"])
    }

    /// Unknown ids and other accounts' jobs look the same.
    public static func jobNotFound(_ id: String) -> Problem {
        Problem(
            .notFound, code: "job_not_found", title: Say.Title.jobNotFound,
            detail: Say.jobNotFound(id))
    }
}
