import CIsolation

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
}
