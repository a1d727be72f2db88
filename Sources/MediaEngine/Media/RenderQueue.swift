import FFmpeg
import Foundation
import Synchronization

/// The first error of a render's stages. Recording it stops every stage: each queue wakes its
/// waiters, and they throw `RenderStop.stopped`, which is not recorded (the first error wins).
package final class RenderStop: @unchecked Sendable {
    /// What a stage throws when another stage stopped the render; never reported.
    package static let stopped = MediaError(.cancelled, operation: "render", detail: "stopped by another stage")

    private let lock = NSLock()
    private var first: MediaError?
    private var wakers: [() -> Void] = []
    private let flag = Atomic<Bool>(false)

    package var isStopped: Bool { flag.load(ordering: .acquiring) }

    package var error: MediaError? {
        lock.lock()
        defer { lock.unlock() }
        return first
    }

    package func register(_ waker: @escaping () -> Void) {
        lock.lock()
        wakers.append(waker)
        lock.unlock()
    }

    package func fail(_ error: MediaError) {
        lock.lock()
        let wake = first == nil ? wakers : []
        if first == nil { first = error }
        lock.unlock()
        flag.store(true, ordering: .releasing)
        for waker in wake { waker() }
    }
}

/// A bounded first-in first-out queue between two render stages (or a pool of free buffers going
/// back): `push` waits while it is full and `pop` while it is empty, so the stages run at once
/// but no stage gets more than `capacity` items ahead. Items are moved through it; the ring is
/// allocated once.
package final class RenderQueue<Element>: @unchecked Sendable {
    private let condition = NSCondition()
    private var ring: [Element?]
    private var head = 0
    private var count = 0
    private let stop: RenderStop

    package init(capacity: Int, stop: RenderStop) {
        ring = Array(repeating: nil, count: max(1, capacity))
        self.stop = stop
        stop.register { [condition] in
            // Taking the lock orders this wake-up after a waiter's check of the flag.
            condition.lock()
            condition.broadcast()
            condition.unlock()
        }
    }

    package func push(_ element: Element) throws(MediaError) {
        condition.lock()
        defer { condition.unlock() }
        while count == ring.count && !stop.isStopped { condition.wait() }
        if stop.isStopped { throw RenderStop.stopped }
        ring[(head + count) % ring.count] = element
        count += 1
        condition.broadcast()
    }

    package func pop() throws(MediaError) -> Element {
        condition.lock()
        defer { condition.unlock() }
        while count == 0 && !stop.isStopped { condition.wait() }
        if stop.isStopped { throw RenderStop.stopped }
        let element = ring[head]!
        ring[head] = nil
        head = (head + 1) % ring.count
        count -= 1
        condition.broadcast()
        return element
    }
}
