import ArgumentParser
import HighlightJob
import Isolation

/// `moments job-exec` (hidden): the isolated child the service starts for each probe and job. It
/// reads one task as JSON on standard input and writes JSON lines on standard output.
struct JobExecCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "job-exec",
        abstract: "Run one media task in isolation (started by the service; not for direct use).",
        shouldDisplay: false)

    /// Tests of the sandbox: enter it as a media child does, try each way out, report to this file.
    @Option(name: .customLong("sandbox-probe"), help: .hidden) var sandboxProbe: String?
    @Option(name: .customLong("server-pid"), help: .hidden) var serverPID: Int32?
    @Option(name: .customLong("udp-port"), help: .hidden) var udpPort: UInt16?
    @Option(name: .customLong("abstract-socket"), help: .hidden) var abstractSocket: String?
    @Option(name: .customLong("unix-socket"), help: .hidden) var unixSocket: String?
    @Option(name: .customLong("shm-file"), help: .hidden) var sharedMemoryFile: String?
    @Option(name: .customLong("read-file"), help: .hidden) var readFiles: [String] = []
    @Option(name: .customLong("victim-pid"), help: .hidden) var victims: [Int32] = []
    /// The probe as the child's first program: only what was set up before exec holds it.
    @Flag(name: .customLong("outer-only"), help: .hidden) var outerOnly = false
    /// Tests of the child's allocations: prints how many of eight 1080p frames got pages of their own.
    @Flag(name: .customLong("memory-check"), help: .hidden) var memoryCheck = false

    func run() throws {
        if memoryCheck {
            print(ProcessMemory.checkPictureBuffers())
            return
        }
        if let sandboxProbe {
            var targets = SandboxProbe.Targets(report: sandboxProbe)
            targets.serverPID = serverPID
            targets.udpPort = udpPort
            targets.abstractSocket = abstractSocket
            targets.unixSocket = unixSocket
            targets.sharedMemoryFile = sharedMemoryFile
            targets.readFiles = readFiles
            targets.victims = victims
            targets.enterSandbox = !outerOnly
            let status = SandboxProbe.run(targets)
            if status != 0 { throw ExitCode(status) }
            return
        }
        let status = MediaChildMain.run()
        if status != 0 { throw ExitCode(status) }
    }
}
