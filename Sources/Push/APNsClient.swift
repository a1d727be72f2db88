import AsyncHTTPClient
import Foundation
import Store
import NIOCore
import NIOSSL
import Synchronization

/// How APNs answered one push (or why there was no answer).
public struct APNsAnswer: Sendable, Equatable {
    /// The HTTP status; nil when no answer was had.
    public var statusCode: Int?
    /// APNs' `reason` (e.g. "Unregistered", "BadDeviceToken"), or what went wrong before an answer
    /// ("timeout", "connection"); nil for 200.
    public var reason: String?
}

/// Apple's provider API over HTTP/2 (negotiated by ALPN): one POST per push to
/// `/3/device/{token}` on the production or sandbox endpoint, with the provider token.
public final class APNsClient: Sendable {
    public let credentials: APNsCredentials
    public let tokens: APNsProviderToken
    let http: HTTPClient
    /// The longest one send may take, all of it: the connection (when there is none yet), the
    /// request, the answer's head and its body. Before, the 10 s timeout ended at the head: an
    /// endpoint that answered the head and then trickled the body held its push (and a slot of
    /// the dispatcher) forever, and the push was sent again when its lease ran out.
    public let deadline: AttemptDeadline
    /// The default deadline: APNs answers in well under a second.
    public static let defaultDeadline = AttemptDeadline(.seconds(10))
    /// Largest part of an answer read (APNs' error bodies are a few dozen bytes).
    static let maxResponseBytes = 16 * 1024

    public init(credentials: APNsCredentials, deadline: AttemptDeadline = APNsClient.defaultDeadline) {
        self.credentials = credentials
        self.deadline = deadline
        tokens = APNsProviderToken(credentials: credentials)
        http = Self.pool(for: credentials)
    }

    /// One HTTP client per trust configuration, kept for the process's life: APNs wants its
    /// connections long-lived (a new TLS handshake per push is what it asks providers not to do).
    static let pools = Mutex<[String: HTTPClient]>([:])

    static func pool(for credentials: APNsCredentials) -> HTTPClient {
        pools.withLock { pools in
            if let client = pools[credentials.caFile] { return client }
            var tls = TLSConfiguration.makeClientConfiguration()
            if !credentials.extraTrustRoots.isEmpty {
                tls.additionalTrustRoots = [.certificates(credentials.extraTrustRoots)]
            }
            var configuration = HTTPClient.Configuration(tlsConfiguration: tls)
            configuration.httpVersion = .automatic
            configuration.redirectConfiguration = .disallow
            configuration.decompression = .disabled
            configuration.timeout = .init(connect: .seconds(10), read: .seconds(10))
            let client = HTTPClient(eventLoopGroup: HTTPClient.defaultEventLoopGroup, configuration: configuration)
            pools[credentials.caFile] = client
            return client
        }
    }

    /// Sends one push: `payload` (the stored APNs JSON) to `token`, collapsing with others of `collapseId`.
    /// The provider token in use is returned too, so a 403 ExpiredProviderToken replaces that one.
    public func send(payload: String, token: String, environment: PushEnvironment, collapseId: String, now: Date) async
        -> (APNsAnswer, String?)
    {
        let jwt: String
        do {
            jwt = try await tokens.current(now: now).jwt
        } catch {
            return (APNsAnswer(statusCode: nil, reason: "signing"), nil)
        }
        let origin = environment == .sandbox ? credentials.sandboxEndpoint : credentials.endpoint
        var request = HTTPClientRequest(url: "\(origin)/3/device/\(token)")
        request.method = .POST
        request.headers.add(name: "authorization", value: "bearer \(jwt)")
        request.headers.add(name: "apns-topic", value: credentials.topic)
        request.headers.add(name: "apns-push-type", value: "alert")
        request.headers.add(name: "apns-priority", value: "10")
        request.headers.add(name: "apns-collapse-id", value: String(collapseId.prefix(64)))
        request.headers.add(name: "content-type", value: "application/json")
        request.body = .bytes(ByteBuffer(string: payload))
        // The head's status, once it is in: a body that does not come within the deadline does
        // not unsay it (a 200 is a push APNs took; sending it again would show it twice).
        let head = HeadStatus()
        let (http, prepared, until) = (self.http, request, NIODeadline.now() + .init(deadline.headLimit))
        do {
            let (code, body) = try await deadline.run {
                let response = try await http.execute(prepared, deadline: until, logger: nil)
                head.code.store(Int(response.status.code), ordering: .relaxed)
                let body = try await response.body.collect(upTo: Self.maxResponseBytes)
                return (Int(response.status.code), body)
            }
            if code == 200 { return (APNsAnswer(statusCode: 200, reason: nil), jwt) }
            return (APNsAnswer(statusCode: code, reason: Self.reason(in: body) ?? "HTTP \(code)"), jwt)
        } catch {
            let code = head.code.load(ordering: .relaxed)
            if code == 200 { return (APNsAnswer(statusCode: 200, reason: nil), jwt) }
            if code > 0 { return (APNsAnswer(statusCode: code, reason: "HTTP \(code)"), jwt) }
            return (APNsAnswer(statusCode: nil, reason: Self.describe(error)), jwt)
        }
    }

    /// APNs' `{"reason": "…"}`, kept only when it is a plain word (it becomes a metric label).
    static func reason(in body: ByteBuffer?) -> String? {
        guard let body,
            let object = try? JSONSerialization.jsonObject(with: Data(body.readableBytesView)) as? [String: Any],
            let reason = object["reason"] as? String, (1...64).contains(reason.count),
            reason.allSatisfy({ $0.isASCII && $0.isLetter })
        else { return nil }
        return reason
    }

    /// Why no answer was had, in one word.
    static func describe(_ error: any Error) -> String {
        if error is AttemptDeadline.Exceeded { return "timeout" }
        if let error = error as? HTTPClientError {
            switch error {
            case .deadlineExceeded, .readTimeout, .connectTimeout, .writeTimeout: return "timeout"
            default: break
            }
        }
        let text = String(describing: error).lowercased()
        if text.contains("timeout") || text.contains("timed out") { return "timeout" }
        if text.contains("certificate") || text.contains("tls") || text.contains("ssl") || text.contains("handshake") {
            return "tls"
        }
        return "connection"
    }
}

/// The status of an answer's head, once it is in (0 before).
final class HeadStatus: Sendable {
    let code = Atomic<Int>(0)
}
