import Logging
import NIOCore
import Synchronization

/// Open connections of one server, against `http.maxConnections`.
public final class ConnectionCounter: Sendable {
    public let limit: Int
    private let open = Atomic<Int>(0)

    /// `limit` 0: no cap.
    public init(limit: Int) { self.limit = limit }

    /// Counts one more connection; false (and not counted) when the cap is reached.
    public func acquire() -> Bool {
        let now = open.wrappingAdd(1, ordering: .relaxed).newValue
        if limit > 0 && now > limit {
            open.wrappingSubtract(1, ordering: .relaxed)
            return false
        }
        return true
    }

    public func release() { open.wrappingSubtract(1, ordering: .relaxed) }
}

/// What the HTTP-level handler tells the byte-level guard (user outbound events travel from the
/// HTTP parts towards the socket, where the guard sits).
public enum RequestHeadEvent: Sendable {
    /// A request head was decoded.
    case received
    /// A response was written to its end.
    case answered
}

/// First in a connection's pipeline, on raw bytes:
/// - closes a connection over `http.maxConnections` as soon as it is accepted;
/// - closes a connection whose request head is not complete `http.headerTimeoutSeconds` after its
///   first byte arrived (slowloris: a head sent a byte at a time would otherwise hold a connection
///   for as long as the idle timeout is restarted by each byte);
/// - tells the request being answered when its client closes its side of the connection
///   (`onClientLeaving`): Hummingbird allows half-closed connections and does not cancel a
///   handler whose client went away.
public final class ConnectionGuard: ChannelDuplexHandler, RemovableChannelHandler {
    public typealias InboundIn = ByteBuffer
    public typealias InboundOut = ByteBuffer
    public typealias OutboundIn = IOData
    public typealias OutboundOut = IOData

    public let counter: ConnectionCounter
    public let headerTimeout: TimeAmount?
    public let logger: Logger
    private var admitted = false
    /// Heads decoded and responses finished: a head is awaited when they are equal.
    private var heads = 0
    private var answers = 0
    private var headerTimer: Scheduled<Void>?
    /// What to run when the client closes its side before the request in progress is answered.
    private var whenClientLeaves: [() -> Void] = []
    private var clientLeft = false

    public init(counter: ConnectionCounter, headerTimeout: TimeAmount?, logger: Logger) {
        self.counter = counter
        self.headerTimeout = headerTimeout
        self.logger = logger
    }

    public func handlerAdded(context: ChannelHandlerContext) {
        admitted = counter.acquire()
        if !admitted {
            logger.notice("connection refused: too many open connections", metadata: ["limit": "\(counter.limit)"])
            if context.channel.isActive { context.close(promise: nil) }
        }
    }

    public func handlerRemoved(context: ChannelHandlerContext) {
        headerTimer?.cancel()
        headerTimer = nil
        if admitted {
            admitted = false
            counter.release()
        }
    }

    public func channelActive(context: ChannelHandlerContext) {
        guard admitted else {
            context.close(promise: nil)
            return
        }
        context.fireChannelActive()
    }

    public func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard admitted else { return }
        if heads == answers, headerTimer == nil, let headerTimeout {
            let loopBound = NIOLoopBound(context, eventLoop: context.eventLoop)
            let logger = self.logger
            headerTimer = context.eventLoop.scheduleTask(in: headerTimeout) {
                logger.info(
                    "connection closed: request head not complete in time",
                    metadata: ["timeout_ms": "\(headerTimeout.nanoseconds / 1_000_000)"])
                loopBound.value.close(promise: nil)
            }
        }
        context.fireChannelRead(data)
    }

    public func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if let event = event as? ChannelEvent, event == .inputClosed { clientLeaves() }
        context.fireUserInboundEventTriggered(event)
    }

    public func channelInactive(context: ChannelHandlerContext) {
        clientLeaves()
        context.fireChannelInactive()
    }

    /// Runs `action` (on the event loop) when the client closes its side of the connection before
    /// the request in progress is answered; at once if it has already. Dropped once the request is
    /// answered.
    public func onClientLeaving(_ action: @escaping () -> Void) {
        if clientLeft { action() } else { whenClientLeaves.append(action) }
    }

    private func clientLeaves() {
        clientLeft = true
        let actions = whenClientLeaves
        whenClientLeaves = []
        for action in actions { action() }
    }

    public func triggerUserOutboundEvent(context: ChannelHandlerContext, event: Any, promise: EventLoopPromise<Void>?) {
        guard let event = event as? RequestHeadEvent else {
            context.triggerUserOutboundEvent(event, promise: promise)
            return
        }
        switch event {
        case .received:
            heads += 1
            headerTimer?.cancel()
            headerTimer = nil
        case .answered:
            answers = min(heads, answers + 1)
            whenClientLeaves = []
        }
        promise?.succeed()
    }
}
