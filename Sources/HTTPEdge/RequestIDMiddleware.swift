import Foundation
import HTTPTypes
import Hummingbird
import Logging

/// Every request's id: the client's `X-Request-Id` when it is short and plain, a new one otherwise.
public enum RequestIDPolicy {
    public static let header = HTTPField.Name("X-Request-Id")!
    /// The log metadata key that carries it (every line logged for the request has it).
    public static let metadataKey = "request_id"
    public static let maxLength = 64

    /// The client's id, if it is 1...64 characters of [A-Za-z0-9-_] (anything else could forge log
    /// lines or carry markup), else a fresh one.
    public static func choose(clientSupplied: String?) -> String {
        if let text = clientSupplied, (1...maxLength).contains(text.utf8.count),
            text.utf8.allSatisfy({ isSafe($0) })
        {
            return text
        }
        return UUID().uuidString.lowercased()
    }

    public static func isSafe(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
            UInt8(ascii: "0")...UInt8(ascii: "9"),
            UInt8(ascii: "-"), UInt8(ascii: "_"):
            true
        default: false
        }
    }
}

/// Outermost middleware: gives the request its id, puts it in the logger's metadata, and sends it
/// back as `X-Request-Id` on every response (problems carry it as `request_id` too), so a user's
/// report can be matched with the server's log.
public struct RequestIDMiddleware<Context: RequestContext>: RouterMiddleware {
    public init() {}

    public func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws
        -> Response
    {
        let id = RequestIDPolicy.choose(clientSupplied: request.headers[RequestIDPolicy.header])
        var context = context
        context.logger[metadataKey: RequestIDPolicy.metadataKey] = .string(id)
        var response = try await next(request, context)
        response.headers[RequestIDPolicy.header] = id
        return response
    }
}
