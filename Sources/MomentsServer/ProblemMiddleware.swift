import Foundation
import HTTPTypes
import Hummingbird
import Logging

/// Turns every error into problem+json: our Problems as they are, Hummingbird's HTTP errors (no
/// route, wrong method, body too large, undecodable JSON) with a useful detail, anything else into
/// a 500 that hides internals (they are logged).
struct ProblemMiddleware<Context: RequestContext>: RouterMiddleware {
    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        do {
            return try await next(request, context)
        } catch let problem as Problem {
            return try problem.response(from: request, context: context)
        } catch let error as any HTTPResponseError {
            return try Self.problem(for: error, request: request).response(from: request, context: context)
        } catch let error as DecodingError {
            return try Problem.badRequest("invalid_json", "The request body is not the JSON this endpoint expects: \(Self.describe(error))")
                .response(from: request, context: context)
        } catch {
            context.logger.error("unhandled error", metadata: ["error": "\(error)", "path": "\(request.uri.path)"])
            return try Problem(.internalServerError, code: "internal_error",
                               detail: "Something went wrong on the server. Please try again; if it keeps happening, report the request's time and path.")
                .response(from: request, context: context)
        }
    }

    static func problem(for error: any HTTPResponseError, request: Request) -> Problem {
        switch error.status {
        case .notFound:
            return Problem(.notFound, code: "not_found", detail: "There is no endpoint \(request.method) \(request.uri.path). The API is described at /openapi.json.")
        case .methodNotAllowed:
            return Problem(.methodNotAllowed, code: "method_not_allowed", detail: "\(request.method) is not allowed on \(request.uri.path). The API is described at /openapi.json.")
        case .contentTooLarge:
            return Problem(.contentTooLarge, code: "body_too_large", detail: "The request body is too large for this endpoint.")
        default:
            let message = (error as? HTTPError)?.body ?? error.status.reasonPhrase
            return Problem(error.status, code: error.status.code >= 500 ? "server_error" : "bad_request", detail: message)
        }
    }

    static func describe(_ error: DecodingError) -> String {
        switch error {
        case .keyNotFound(let key, _): return "the field \"\(key.stringValue)\" is missing."
        case .typeMismatch(_, let c), .valueNotFound(_, let c):
            return "the field \"\(c.codingPath.map(\.stringValue).joined(separator: "."))\" has the wrong type."
        case .dataCorrupted(let c): return c.debugDescription
        @unknown default: return "\(error)"
        }
    }
}
