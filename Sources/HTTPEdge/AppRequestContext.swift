import Foundation
import HTTPTypes
import Hummingbird
import Store
import NIOCore
import Wording

/// The request context: Hummingbird's core storage plus the authenticated account.
public struct AppRequestContext: RequestContext {
    public var coreContext: CoreRequestContextStorage
    /// Set by APIKeyMiddleware on the routes that need a key.
    public var account: Account?
    /// The id of the API key the request was authenticated with (set with `account`).
    public var apiKeyId: String?

    /// The TCP peer's IP address, when the channel has one (a proxy's, behind one: see
    /// `ClientAddressResolver`).
    public var peerAddress: String?

    /// The connection, to invite a body held back by `Expect: 100-continue`.
    public let channel: any Channel

    public init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
        account = nil
        apiKeyId = nil
        channel = source.channel
        peerAddress = source.channel.remoteAddress?.ipAddress
    }

    /// The request passed the route's checks and its body is about to be read: answers the
    /// client's `Expect: 100-continue`, if it sent one, with "100 Continue" (see
    /// `UploadConnectionHandler`). A request refused before this never gets one.
    public func inviteBody() {
        channel.triggerUserOutboundEvent(InviteBodyEvent(), promise: nil)
    }

    /// Writes an informational (1xx) response now, before the final one (see `UploadConnectionHandler`).
    public func sendInformational(_ head: HTTPResponse) {
        channel.triggerUserOutboundEvent(InformationalResponseEvent(head: head), promise: nil)
    }

    /// Closes the connection (a newer append took over this request's upload).
    public func closeConnection() {
        channel.close(promise: nil)
    }

    /// Runs `operation`, cancelled if the client closes its side of the connection first (see
    /// `ConnectionGuard.onClientLeaving`). Hummingbird does not cancel a handler whose client went
    /// away; work that holds a shared slot while it waits (a webhook URL's address lookup) gives it
    /// back at once this way, not at its deadline.
    public func cancelledIfClientLeaves<T: Sendable>(_ operation: @escaping @Sendable () async throws -> T) async throws
        -> T
    {
        let work = Task { try await operation() }
        let channel = self.channel
        channel.eventLoop.execute {
            guard let connection = try? channel.pipeline.syncOperations.handler(type: ConnectionGuard.self) else {
                return
            }
            connection.onClientLeaving { work.cancel() }
        }
        return try await withTaskCancellationHandler {
            try await work.value
        } onCancel: {
            work.cancel()
        }
    }

    /// JSON bodies (POST /api/v1/accounts) are small.
    public var maxUploadSize: Int { 64 * 1024 }

    public var responseEncoder: JSONLineEncoder { JSONLineEncoder() }

    /// The authenticated account (the middleware guarantees one on protected routes).
    public func requireAccount() throws -> Account {
        guard let account else {
            throw Problem(.unauthorized, code: "missing_api_key", detail: Say.missingAPIKey)
        }
        return account
    }
}

/// JSON responses: snake_case keys (each type names them), ISO 8601 dates, sorted keys, and a final
/// newline so curl output reads well in a terminal.
public struct JSONLineEncoder: ResponseEncoder, Sendable {
    public static let encoder: JSONEncoder = {
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .iso8601
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return encoder
    }()

    public func encode(_ value: some Encodable, from request: Request, context: some RequestContext) throws -> Response
    {
        var data = try Self.encoder.encode(value)
        data.append(0x0A)
        return Response(
            status: .ok, headers: [.contentType: "application/json; charset=utf-8"],
            body: .init(byteBuffer: ByteBuffer(bytes: data)))
    }
}
