import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix

/// A loopback HTTP server answering each request with the next scripted reply (500 when the
/// script is used up) and recording what it was asked: for failure paths no real S3 server
/// produces on demand (503 SlowDown, 200 with an error body, a part refused mid-upload).
final class ScriptedHTTPServer: @unchecked Sendable {
    struct Reply: Sendable {
        var status: HTTPResponseStatus
        var headers: [(String, String)] = []
        var body: String = ""
        /// A Content-Length larger than the body, then the connection closed: a transfer cut short.
        var declaredLength: Int? = nil
        /// No answer at all: the request hangs until the client gives up.
        var hang = false
    }

    struct Request: Sendable {
        var method: HTTPMethod
        var uri: String
        var bodyBytes: Int
    }

    private let lock = NSLock()
    private var replies: [Reply]
    private var recorded: [Request] = []
    private var channel: (any Channel)?

    var requests: [Request] { lock.withLock { recorded } }
    var port: Int { channel?.localAddress?.port ?? 0 }
    var endpoint: URL { URL(string: "http://127.0.0.1:\(port)")! }

    init(_ replies: [Reply]) {
        self.replies = replies
    }

    static func start(_ replies: [Reply]) async throws -> ScriptedHTTPServer {
        let server = ScriptedHTTPServer(replies)
        server.channel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.configureHTTPServerPipeline()
                    try channel.pipeline.syncOperations.addHandler(Handler(server: server))
                }
            }
            .bind(host: "127.0.0.1", port: 0).get()
        return server
    }

    func stop() async throws {
        try await channel?.close()
    }

    fileprivate func next(for request: Request) -> Reply {
        lock.withLock {
            recorded.append(request)
            return replies.isEmpty ? Reply(status: .internalServerError) : replies.removeFirst()
        }
    }

    private final class Handler: ChannelInboundHandler {
        typealias InboundIn = HTTPServerRequestPart
        typealias OutboundOut = HTTPServerResponsePart

        let server: ScriptedHTTPServer
        var head: HTTPRequestHead?
        var bodyBytes = 0

        init(server: ScriptedHTTPServer) { self.server = server }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            switch unwrapInboundIn(data) {
            case .head(let h):
                head = h
                bodyBytes = 0
            case .body(let buffer):
                bodyBytes += buffer.readableBytes
            case .end:
                guard let head else { return }
                let reply = server.next(for: Request(method: head.method, uri: head.uri, bodyBytes: bodyBytes))
                if reply.hang { return }
                var headers = HTTPHeaders(reply.headers)
                headers.replaceOrAdd(
                    name: "content-length", value: String(reply.declaredLength ?? reply.body.utf8.count))
                context.write(
                    wrapOutboundOut(.head(HTTPResponseHead(version: .http1_1, status: reply.status, headers: headers))),
                    promise: nil)
                if head.method != .HEAD {
                    context.write(wrapOutboundOut(.body(.byteBuffer(ByteBuffer(string: reply.body)))), promise: nil)
                }
                if reply.declaredLength != nil {
                    context.flush()
                    context.close(promise: nil)
                    return
                }
                context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
            }
        }
    }
}
