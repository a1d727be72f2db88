import Hummingbird
import HummingbirdCore
import Logging
import NIOCore

/// Hummingbird's HTTP/1 child channel with a `ConnectionGuard` in front of the HTTP decoder (it
/// needs the raw bytes: a head that never completes produces no HTTP part to time).
public struct GuardedHTTP1Channel: ServerChildChannel {
    public typealias Value = HTTP1Channel.Value

    public let inner: HTTP1Channel
    public let counter: ConnectionCounter
    public let headerTimeout: TimeAmount?

    public func setup(channel: any Channel, logger: Logger) -> EventLoopFuture<Value> {
        let guardHandler = ConnectionGuard(counter: counter, headerTimeout: headerTimeout, logger: logger)
        do {
            try channel.pipeline.syncOperations.addHandler(guardHandler)
        } catch {
            return channel.eventLoop.makeFailedFuture(error)
        }
        return inner.setup(channel: channel, logger: logger)
    }

    public func handle(value: Value, logger: Logger) async {
        await inner.handle(value: value, logger: logger)
    }
}

extension HTTPServerBuilder {
    /// HTTP/1 with the transport limits of `settings`: open connections, header and idle
    /// timeouts, and the body handling of `UploadConnectionHandler`.
    public static func guardedHTTP1(
        counter: ConnectionCounter, headerTimeoutSeconds: Double, idleTimeoutSeconds: Double,
        minBytesPerSecond: Int, stallSeconds: Double, logger: Logger
    ) -> HTTPServerBuilder {
        let header: TimeAmount? = headerTimeoutSeconds > 0 ? .nanoseconds(Int64(headerTimeoutSeconds * 1e9)) : nil
        let idle: TimeAmount? = idleTimeoutSeconds > 0 ? .nanoseconds(Int64(idleTimeoutSeconds * 1e9)) : nil
        return HTTPServerBuilder { responder in
            let configuration = HTTP1Channel.Configuration(
                additionalChannelHandlers: [
                    UploadConnectionHandler(
                        minBytesPerSecond: minBytesPerSecond, stallSeconds: stallSeconds, logger: logger)
                ],
                idleTimeout: idle)
            return GuardedHTTP1Channel(
                inner: HTTP1Channel(responder: responder, configuration: configuration),
                counter: counter, headerTimeout: header)
        }
    }
}
