import Foundation
import HTTPTypes
import Hummingbird
import Logging
import Requests
import Wording

/// Turns every error into problem+json: our Problems as they are, Hummingbird's HTTP errors (no
/// route, wrong method, body too large, undecodable JSON) with a useful detail, anything else (and
/// any 5xx of the framework) into a generic problem that hides internals: they are logged with the
/// request's id, which the problem carries (`Problem.response` withholds paths and FFmpeg text
/// from every detail).
public struct ProblemMiddleware<Context: RequestContext>: RouterMiddleware {
    public init() {}

    public func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws
        -> Response
    {
        do {
            return try await next(request, context)
        } catch {
            var problem = Self.problem(for: error, request: request, context: context)
            // The handler may not have read the body (a refused upload): close the connection
            // after the answer rather than read what is left of it.
            if request.headers[.contentLength].map({ $0 != "0" }) ?? (request.headers[.transferEncoding] != nil) {
                problem.headers[.connection] = "close"
            }
            return try problem.response(from: request, context: context)
        }
    }

    public static func problem(for error: any Error, request: Request, context: Context) -> Problem {
        switch error {
        case let problem as Problem:
            return problem
        case let refusal as Refusal:
            return Problem(refusal)
        case let refusal as RecutRefusal:
            return Problem(refusal)
        case let error as any HTTPResponseError:
            return problem(for: error, request: request, context: context)
        case let error as DecodingError:
            return Problem.badRequest(
                "invalid_json", Say.notTheExpectedJSON(describe(error)))
        default:
            context.logger.error("unhandled error", metadata: ["error": "\(error)", "path": "\(request.uri.path)"])
            return Problem(.internalServerError, code: "internal_error", detail: genericServerError)
        }
    }

    public static var genericServerError: String {
        Say.internalError
    }

    public static func problem(for error: any HTTPResponseError, request: Request, context: Context) -> Problem {
        switch error.status {
        case .notFound:
            return Problem(
                .notFound, code: "not_found",
                detail:
                    Say.noEndpoint(method: "\(request.method)")
            )
        case .methodNotAllowed:
            return Problem(
                .methodNotAllowed, code: "method_not_allowed",
                detail:
                    Say.methodNotAllowed("\(request.method)")
            )
        case .contentTooLarge:
            return Problem(
                .contentTooLarge, code: "body_too_large", detail: Say.bodyTooLarge)
        case let status where status.code >= 500:
            // A server-side failure inside the framework: its text is for the log only.
            context.logger.error("server error", metadata: ["error": "\(error)", "path": "\(request.uri.path)"])
            return Problem(status, code: "server_error", detail: genericServerError)
        default:
            let message = (error as? HTTPError)?.body ?? error.status.reasonPhrase
            return Problem(error.status, code: "bad_request", detail: message)
        }
    }

    public static func describe(_ error: DecodingError) -> String {
        switch error {
        case .keyNotFound(let key, _): return Say.fieldMissing(key.stringValue)
        case .typeMismatch(_, let c), .valueNotFound(_, let c):
            return Say.fieldOfWrongType(c.codingPath.map(\.stringValue).joined(separator: "."))
        case .dataCorrupted(let c): return c.debugDescription
        @unknown default: return "\(error)"
        }
    }
}
