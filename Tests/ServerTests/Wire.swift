import AsyncHTTPClient
import Foundation
import HummingbirdTesting
import NIOCore
import NIOHTTP1
import Testing

/// Requests on connections of their own (AsyncHTTPClient): a refused append closes its connection
/// (its body is not read), which the test client's single connection would not survive.
struct Wire: Sendable {
    let port: Int
    static let client: HTTPClient = {
        var config = HTTPClient.Configuration()
        config.redirectConfiguration = .disallow
        // Bursts (sixty creations at once) on a loaded 2-core machine: more connections, and a
        // request may wait longer for one than the 10 s default before it counts as failed.
        config.connectionPool.concurrentHTTP1ConnectionsPerHostSoftLimit = 64
        config.timeout.connect = .seconds(60)
        return HTTPClient(eventLoopGroup: HTTPClient.defaultEventLoopGroup, configuration: config)
    }()

    struct Reply {
        var status: Int
        var headers: HTTPHeaders
        var body: Data
        func header(_ name: String) -> String? { headers.first(name: name) }
        var text: String { String(decoding: body, as: UTF8.self) }
        func json() throws -> [String: Any] { try JSONSerialization.jsonObject(with: body) as? [String: Any] ?? [:] }
    }

    init(_ client: any TestClientProtocol) throws { port = try #require(client.port) }

    /// `timeout` bounds the whole exchange: a stream that lasts a job (server-sent events) needs
    /// longer than HummingbirdTesting's client gives a request (20 s, from the request to its end).
    /// `headReceived` is told the status as soon as the answer's head arrives (a stream's body may
    /// last the job).
    func send(
        _ method: HTTPMethod, _ path: String, key: String?, headers: [(String, String)] = [], body: Data? = nil,
        timeout: TimeAmount = .seconds(60), headReceived: (@Sendable (Int) -> Void)? = nil
    ) async throws -> Reply {
        var request = HTTPClientRequest(url: "http://127.0.0.1:\(port)\(path)")
        request.method = method
        if let key { request.headers.add(name: "Authorization", value: "Bearer \(key)") }
        for (name, value) in headers { request.headers.add(name: name, value: value) }
        if let body { request.body = .bytes(ByteBuffer(bytes: body)) }
        let response = try await Self.client.execute(request, timeout: timeout)
        headReceived?(Int(response.status.code))
        var collected = try await response.body.collect(upTo: 1 << 24)
        return Reply(
            status: Int(response.status.code), headers: response.headers,
            body: collected.readData(length: collected.readableBytes) ?? Data())
    }
}
