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
        // Each buffer is asked on its own: tests running beside this one allocate and free too,
        // so a process-wide total of mapped bytes moves under it.
        var buffers: [UnsafeMutableRawPointer] = []
        for _ in 0..<8 { buffers.append(try #require(malloc(frame1080p))) }
        let mapped = buffers.filter(ProcessMemory.isMappedOnItsOwn).count
        for buffer in buffers { free(buffer) }
        #expect(mapped == 8, "of 8 buffers of \(frame1080p >> 20) MB, only \(mapped) were mapped on their own")
        // The check can tell: a small buffer comes from an arena.
        let small = try #require(malloc(4096))
        defer { free(small) }
        #expect(!ProcessMemory.isMappedOnItsOwn(small))
    }
}
