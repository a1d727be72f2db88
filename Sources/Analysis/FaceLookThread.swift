import Foundation

/// Runs the face detector on a thread of its own, beside the decode that feeds the analysers
/// (a look costs about 7 ms of one core, and the decode seldom keeps both cores busy). Pictures
/// are handed over in a few preallocated slots; a full set of slots makes `submit` wait, so no
/// look is ever skipped and the results are the same however the threads are timed. Looks are
/// detected in the order they were submitted.
final class FaceLookThread: @unchecked Sendable {
    struct Result {
        var time: Double
        var width: Int
        var height: Int
        var faces: [FaceDetector.Detection]
    }

    /// One picture handed over: owned by the submitting thread until queued, then by the worker.
    /// A class of its own, so filling one never touches the array the worker reads another from.
    private final class Slot {
        var picture = FaceDetector.Picture()
        var time = 0.0
    }

    private let detector = FaceDetector()
    private let slots: [Slot]
    private var idle: [Int]
    private var queued: [Int] = []
    private var results: [Result] = []
    private var stopping = false
    private let lock = NSLock()
    private let freeSlots: DispatchSemaphore
    private let work = DispatchSemaphore(value: 0)
    private let done = DispatchSemaphore(value: 0)

    init(slots count: Int = 3) {
        slots = (0..<count).map { _ in Slot() }
        idle = Array(0..<count)
        freeSlots = DispatchSemaphore(value: count)
        let thread = Thread { [unowned self] in run() }
        thread.name = "moments-faces"
        thread.stackSize = 4 << 20
        thread.start()
    }

    /// Hands `frame` over for a look (waits while every slot is taken).
    func submit(_ frame: FrameView, rotation: Int) {
        freeSlots.wait()
        lock.lock()
        let slot = idle.removeLast()
        lock.unlock()
        // The slot is this thread's until it is queued.
        slots[slot].picture.fill(frame, rotation: rotation)
        slots[slot].time = frame.time
        lock.lock()
        queued.append(slot)
        lock.unlock()
        work.signal()
    }

    /// Every look's faces, in the order submitted, once all are done; the thread ends.
    func finish() -> [Result] {
        stop()
        lock.lock()
        defer { lock.unlock() }
        return results
    }

    /// Ends the thread after the looks already submitted (idempotent).
    func stop() {
        lock.lock()
        let first = !stopping
        stopping = true
        lock.unlock()
        guard first else { return }
        work.signal()
        done.wait()
    }

    private func run() {
        var found: [FaceDetector.Detection] = []
        while true {
            work.wait()
            while true {
                lock.lock()
                guard !queued.isEmpty else {
                    let finished = stopping
                    lock.unlock()
                    if finished { done.signal(); return }
                    break
                }
                let slot = queued.removeFirst()
                lock.unlock()
                let look = slots[slot]
                detector.detect(look.picture, into: &found)
                let result = Result(time: look.time, width: look.picture.width, height: look.picture.height, faces: found)
                lock.lock()
                results.append(result)
                idle.append(slot)
                lock.unlock()
                freeSlots.signal()
            }
        }
    }
}
