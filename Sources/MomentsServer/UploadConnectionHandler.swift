import HTTPTypes
import NIOCore
import NIOHTTPTypes

/// Connection handling for uploads, in the channel pipeline:
/// - answers `Expect: 100-continue` (curl sends it for bodies over 1 MB and otherwise waits a
///   second before sending) with "100 Continue" right away, unless the declared Content-Length is
///   already over the upload limit: then the client is not invited to send, and gets the 413;
/// - closes the connection after a response that says `Connection: close` (an upload refused
///   mid-stream), instead of reading and discarding the rest of a body that may be gigabytes.
final class UploadConnectionHandler: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPRequestPart
    typealias InboundOut = HTTPRequestPart
    typealias OutboundIn = HTTPResponsePart
    typealias OutboundOut = HTTPResponsePart

    let maxBodyBytes: Int64
    private var closeAfterResponse = false

    init(maxBodyBytes: Int64) { self.maxBodyBytes = maxBodyBytes }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        if case .head(var head) = unwrapInboundIn(data), head.headerFields[.expect]?.lowercased() == "100-continue" {
            head.headerFields[.expect] = nil
            let declared = head.headerFields[.contentLength].flatMap { Int64($0) } ?? 0
            if declared <= maxBodyBytes {
                context.writeAndFlush(wrapOutboundOut(.head(HTTPResponse(status: .continue))), promise: nil)
            }
            context.fireChannelRead(wrapInboundOut(.head(head)))
            return
        }
        context.fireChannelRead(data)
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        switch unwrapOutboundIn(data) {
        case .head(let head) where head.status.code >= 200:
            closeAfterResponse = head.headerFields[.connection]?.lowercased() == "close"
            context.write(data, promise: promise)
        case .end where closeAfterResponse:
            closeAfterResponse = false
            let written = context.eventLoop.makePromise(of: Void.self)
            written.futureResult.cascade(to: promise)
            context.writeAndFlush(data, promise: written)
            written.futureResult.whenComplete { _ in context.close(promise: nil) }
        default:
            context.write(data, promise: promise)
        }
    }
}
