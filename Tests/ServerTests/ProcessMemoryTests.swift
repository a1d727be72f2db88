import Foundation
import Isolation
import Testing

/// A media process gives the picture buffers it frees back to the system, so a job's peak memory
/// is the largest pass's, not the sum of its passes' (issue 27: at most 600 MB on 4K input).
@Suite("Process memory", .onceAcrossEngines)
struct ProcessMemoryTests {
    /// Asked of a fresh job child (`moments job-exec --memory-check`), as the media children are:
    /// in this test process, other tests' freed blocks may serve an allocation from an arena.
    @Test("picture-sized buffers get mappings of their own, even after a larger one was freed")
    func pictureBuffersAreMappedOnTheirOwn() async throws {
        let executable = try #require(ProcessHarness.executable, "build the moments executable first (swift build)")
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = ["job-exec", "--memory-check"]
        let output = Pipe()
        process.standardOutput = output
        try process.run()
        await process.exited()
        let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        #expect(text.trimmingCharacters(in: .whitespacesAndNewlines) == "8", "of 8 buffers of 5 MB, \(text) were mapped on their own")
    }

    @Test("the check can tell: a small buffer comes from an arena")
    func smallBuffersAreNot() throws {
        let small = try #require(malloc(4096))
        defer { free(small) }
        #expect(!ProcessMemory.isMappedOnItsOwn(small))
    }
}
