import ArgumentParser
import Jobs

/// `moments job-exec` (hidden): the isolated child the service starts for each probe and job. It
/// reads one task as JSON on standard input and writes JSON lines on standard output.
struct JobExecCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "job-exec",
        abstract: "Run one media task in isolation (started by the service; not for direct use).",
        shouldDisplay: false)

    func run() throws {
        let status = ChildMain.run()
        if status != 0 { throw ExitCode(status) }
    }
}
