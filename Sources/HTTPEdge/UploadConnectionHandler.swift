import HTTPTypes
import Logging
import NIOCore
import NIOHTTPTypes

/// Sent by a route (through `AppRequestContext.inviteBody()`) once it has accepted a request whose
/// body it is about to read: the handler then answers a pending `Expect: 100-continue`.
public struct InviteBodyEvent: Sendable {}

/// Sent by a route to write an informational (1xx) response before its final one: the IETF
/// resumable upload's "104 Upload Resumption Supported" carrying the upload's Location.
public struct InformationalResponseEvent: Sendable {
    public var head: HTTPResponse
}

/// Connection handling for request bodies, in the channel pipeline after HTTP decoding:
/// - holds back the "100 Continue" a client asks for with `Expect: 100-continue` (curl does for
///   bodies over 1 MB and otherwise waits a second before sending) until the route has checked the
///   key, the quota and the size and invites the body; a request refused before that never gets
///   it, and its connection is closed after the refusal (the client may send the body regardless);
/// - cuts off a body that arrives slower than `upload.minBytesPerSecond` over any
///   `upload.stallSeconds` window (the route's stream then ends, and it deletes its partial file);
/// - closes the connection after a response that says `Connection: close` (an upload refused
///   mid-stream), instead of reading and discarding the rest of a body that may be gigabytes;
/// - tells the byte-level `ConnectionGuard` when a head arrived and a response ended.
public final class UploadConnectionHandler: ChannelDuplexHandler, RemovableChannelHandler {
    public typealias InboundIn = HTTPRequestPart
    public typealias InboundOut = HTTPRequestPart
    public typealias OutboundIn = HTTPResponsePart
    public typealias OutboundOut = HTTPResponsePart

    public let minBytesPerSecond: Int
    public let stallWindow: TimeAmount?
    public let logger: Logger
    private var continuePending = false
    private var closeAfterResponse = false
    /// A request body is still arriving (head seen, end not yet).
    private var bodyOpen = false
    private var windowBytes = 0
    private var rateTimer: RepeatedTask?

    public init(minBytesPerSecond: Int, stallSeconds: Double, logger: Logger) {
        self.minBytesPerSecond = minBytesPerSecond
        self.stallWindow = minBytesPerSecond > 0 && stallSeconds > 0 ? .nanoseconds(Int64(stallSeconds * 1e9)) : nil
        self.logger = logger
    }

    public func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(var head):
            context.triggerUserOutboundEvent(RequestHeadEvent.received, promise: nil)
            let fields = head.headerFields
            bodyOpen = fields[.transferEncoding] != nil || (fields[.contentLength].flatMap { Int64($0) } ?? 0) > 0
            if fields[.expect]?.lowercased() == "100-continue" {
                head.headerFields[.expect] = nil
                continuePending = bodyOpen
                if !continuePending { startRateWatch(context) }
                context.fireChannelRead(wrapInboundOut(.head(head)))
                return
            }
            continuePending = false
            startRateWatch(context)
        case .body(let buffer):
            windowBytes += buffer.readableBytes
        case .end:
            bodyOpen = false
            stopRateWatch()
        }
        context.fireChannelRead(data)
    }

    public func triggerUserOutboundEvent(context: ChannelHandlerContext, event: Any, promise: EventLoopPromise<Void>?) {
        if let informational = event as? InformationalResponseEvent {
            context.writeAndFlush(wrapOutboundOut(.head(informational.head)), promise: promise)
            return
        }
        guard event is InviteBodyEvent else {
            context.triggerUserOutboundEvent(event, promise: promise)
            return
        }
        if continuePending {
            continuePending = false
            context.writeAndFlush(wrapOutboundOut(.head(HTTPResponse(status: .continue))), promise: promise)
            startRateWatch(context)
        } else {
            promise?.succeed()
        }
    }

    public func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        switch unwrapOutboundIn(data) {
        case .head(let head) where head.status.code >= 200:
            // A refusal before the body was invited: the client may send it anyway; close rather
            // than read it.
            closeAfterResponse = head.headerFields[.connection]?.lowercased() == "close" || continuePending
            continuePending = false
            context.write(data, promise: promise)
        case .end:
            context.triggerUserOutboundEvent(RequestHeadEvent.answered, promise: nil)
            guard closeAfterResponse else {
                context.write(data, promise: promise)
                return
            }
            closeAfterResponse = false
            let written = context.eventLoop.makePromise(of: Void.self)
            written.futureResult.cascade(to: promise)
            context.writeAndFlush(data, promise: written)
            let loopBound = NIOLoopBound(context, eventLoop: context.eventLoop)
            written.futureResult.whenComplete { _ in loopBound.value.close(promise: nil) }
        default:
            context.write(data, promise: promise)
        }
    }

    public func handlerRemoved(context: ChannelHandlerContext) { stopRateWatch() }

    public func channelInactive(context: ChannelHandlerContext) {
        stopRateWatch()
        context.fireChannelInactive()
    }

    /// Every `stallWindow`, the body must have brought `minBytesPerSecond` × window bytes.
    private func startRateWatch(_ context: ChannelHandlerContext) {
        guard bodyOpen, rateTimer == nil, let stallWindow else { return }
        windowBytes = 0
        let loopBound = NIOLoopBound((handler: self, context: context), eventLoop: context.eventLoop)
        let needed = Int(Double(minBytesPerSecond) * Double(stallWindow.nanoseconds) / 1e9)
        rateTimer = context.eventLoop.scheduleRepeatedTask(initialDelay: stallWindow, delay: stallWindow) { _ in
            let (handler, context) = loopBound.value
            guard handler.bodyOpen else {
                handler.stopRateWatch()
                return
            }
            if handler.windowBytes < needed {
                handler.logger.info(
                    "request body too slow: connection closed",
                    metadata: ["bytes_in_window": "\(handler.windowBytes)", "needed": "\(needed)"])
                handler.stopRateWatch()
                context.close(promise: nil)
            }
            handler.windowBytes = 0
        }
    }

    private func stopRateWatch() {
        rateTimer?.cancel()
        rateTimer = nil
    }
}
