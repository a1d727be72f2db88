import Foundation
import Isolation
import Testing

/// A media process gives the picture buffers it frees back to the system, so a job's peak memory
/// is the largest pass's, not the sum of its passes' (issue 27: at most 600 MB on 4K input).
@Suite("Process memory")
struct ProcessMemoryTests {
    @Test("picture-sized buffers get mappings of their own, even after a larger one was freed")
    func pictureBuffersAreMappedOnTheirOwn() throws {
        ProcessMemory.mapLargeAllocations()
        // glibc's default raises its threshold to the size of a mapped block once that is freed
        // (up to 32 MB): after a 4K frame, 1080p frames would come from an arena that keeps them.
        let frame4K = 3840 * 2160 * 3
        let warmUp = try #require(malloc(frame4K))
        memset(warmUp, 1, frame4K)
        free(warmUp)
        let frame1080p = 1920 * 1080 * 3
        let before = ProcessMemory.mappedBytes
        var buffers: [UnsafeMutableRawPointer] = []
        for _ in 0..<8 { buffers.append(try #require(malloc(frame1080p))) }
        let mapped = ProcessMemory.mappedBytes - before
        for buffer in buffers { free(buffer) }
        #expect(
            mapped >= 6 * frame1080p,
            "8 buffers of \(frame1080p >> 20) MB: only \(mapped >> 20) MB of them were mapped on their own")
    }
}
