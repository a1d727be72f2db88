import ArgumentParser
import FFmpeg
import Foundation
import Isolation
import MediaEngine

@main
struct Moments: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "moments",
        abstract: "Turns a video into a short highlight clip.",
        subcommands: [
            ServeCommand.self, WorkerCommand.self, JobExecCommand.self, AccountsCommand.self, ProbeCommand.self,
            AnalyzeCommand.self, HighlightCommand.self, RenderCommand.self, PosterCommand.self, DecodeCommand.self,
            SampleCommand.self
        ])
}

/// Runs `body` (a media command); a MediaError becomes one line on stderr and exit status 1.
func runReportingErrors(_ body: () throws -> Void) throws {
    ProcessMemory.mapLargeAllocations()
    do {
        try body()
    } catch let error as MediaError {
        FileHandle.standardError.write(Data("moments: \(error.description)\n".utf8))
        throw ExitCode(error.kind == .cancelled ? 130 : 1)
    }
}

/// Cancels `token` on SIGINT/SIGTERM so a long operation stops and removes its partial output.
final class InterruptHandler {
    private var sources: [DispatchSourceSignal] = []

    init(_ token: CancellationToken) {
        for signalNumber in [SIGINT, SIGTERM] {
            signal(signalNumber, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: signalNumber, queue: .global())
            source.setEventHandler { token.cancel() }
            source.resume()
            sources.append(source)
        }
    }
}
