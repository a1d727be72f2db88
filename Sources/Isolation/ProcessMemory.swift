import CIsolation
import Foundation

/// How a media process allocates: picture buffers get pages of their own.
public enum ProcessMemory {
    /// Allocations of this size and larger are mapped on their own (a 256x144 analysis picture is
    /// below it; a 1080p plane, a 4K frame and x264's lookahead buffers are above).
    public static let largeAllocation = 1 << 20

    /// Makes glibc give every large buffer its own mapping, returned to the system when freed
    /// (`moments_map_large_allocations`). A job decodes 4K for the analysis, then again for the
    /// render beside a 1080p encoder and the storyboard's decoder: with glibc's default dynamic
    /// threshold, the buffers the analysis freed stay in the process and the peak is the sum
    /// (`scripts/bench-phone`: 662 MB for analysis and render of 60 s of 4K HEVC, 545 MB with this).
    /// Called first thing in every process that decodes media.
    public static func mapLargeAllocations() {
        _ = moments_map_large_allocations(largeAllocation)
    }

    /// Whether a malloc'd buffer has a mapping of its own, which freeing gives back at once.
    public static func isMappedOnItsOwn(_ buffer: UnsafeMutableRawPointer) -> Bool {
        moments_is_mapped_allocation(buffer) == 1
    }

    /// The check a fresh job child runs for the tests (`moments job-exec --memory-check`): with
    /// `mapLargeAllocations` in force, a 4K frame is allocated and freed (which would raise glibc's
    /// dynamic threshold above a 1080p frame), then eight 1080p frames are allocated: how many of
    /// them have a mapping of their own (8 when it holds). Only meaningful in a process of its own:
    /// elsewhere other threads' freed blocks may serve an allocation from an arena.
    public static func checkPictureBuffers() -> Int {
        mapLargeAllocations()
        let frame4K = 3840 * 2160 * 3
        guard let warmUp = malloc(frame4K) else { return 0 }
        memset(warmUp, 1, frame4K)
        free(warmUp)
        let frame1080p = 1920 * 1080 * 3
        let buffers = (0..<8).compactMap { _ in malloc(frame1080p) }
        defer { for buffer in buffers { free(buffer) } }
        return buffers.filter(isMappedOnItsOwn).count
    }
}
