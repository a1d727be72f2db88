import CIsolation
import Foundation
import NIOCore
import NIOPosix

/// The parent's ends of a child's pipes as NIO channels (non-blocking, on NIO's event loops): its
/// output as lines with backpressure (the child waits while the parent is busy with a message),
/// the tail of its standard error, and its input.
struct ChildPipes: Sendable {
    let output: NIOAsyncChannel<Data, Never>
    let errors: Channel
    let input: Channel

    /// Takes over the descriptors of `child`; on a failure, those not taken over yet are closed
    /// here (NIO closes those it took when their channel closes).
    static func open(_ child: SpawnedChild, watch: ChildWatch) async throws -> ChildPipes {
        let bootstrap = NIOPipeBootstrap(group: MultiThreadedEventLoopGroup.singleton)
        var pending = [child.stdout, child.stderr, child.stdin]
        do {
            let output = try await bootstrap.takingOwnershipOfDescriptor(input: child.stdout) { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(ChildLineHandler(watch: watch))
                    return try NIOAsyncChannel<Data, Never>(wrappingChannelSynchronously: channel)
                }
            }
            pending.removeFirst()
            watch.watchClosing(output.channel, isOutput: true)
            let errors = try await bootstrap.takingOwnershipOfDescriptor(input: child.stderr) { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(ChildErrorTail(watch: watch))
                    return channel
                }
            }
            pending.removeFirst()
            watch.watchClosing(errors, isOutput: false)
            let input = try await bootstrap.takingOwnershipOfDescriptor(output: child.stdin).get()
            return ChildPipes(output: output, errors: errors, input: input)
        } catch {
            for fd in pending { close(fd) }
            throw error
        }
    }
}

/// Splits the child's output into lines (`LineReader`: each byte looked at once, 32 MB at most).
/// A longer line is the child misbehaving: it is killed and its output no longer read.
final class ChildLineHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = Data

    private var reader = LineReader()
    private let watch: ChildWatch

    init(watch: ChildWatch) { self.watch = watch }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let buffer = unwrapInboundIn(data)
        for line in reader.feed(Array(buffer.readableBytesView)[...]) {
            context.fireChannelRead(wrapInboundOut(line))
        }
        if reader.overflowed {
            watch.outputOverflowed()
            context.close(promise: nil)
        }
    }
}

/// Keeps the last 8 KB the child wrote to its standard error (for the log and the reason of an
/// abnormal end).
final class ChildErrorTail: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer

    private let watch: ChildWatch

    init(watch: ChildWatch) { self.watch = watch }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        watch.appendErrors(unwrapInboundIn(data).readableBytesView)
    }
}
