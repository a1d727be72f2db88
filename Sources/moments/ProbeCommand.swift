import ArgumentParser
import FFmpeg
import Foundation
import HighlightJob
import Isolation
import Logging
import MediaEngine
import MomentsServer

struct ProbeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "probe", abstract: "Describe a video file.")

    @Argument(help: "The video file.") var file: String
    @Flag(help: "Print JSON (snake_case keys).") var json = false
    @Flag(help: "Probe in an isolated child process (moments job-exec), as the service does with uploads.")
    var isolated = false
    @Option(help: "Probe this many times and print the mean time per probe on stderr (measures the cost of isolation).")
    var `repeat` = 1

    func run() async throws {
        var probed: Result<MediaInfo, MediaError>?
        let started = DispatchTime.now()
        for _ in 0..<max(1, `repeat`) {
            do throws(MediaError) { probed = .success(try await probeOnce()) } catch {
                probed = .failure(error)
                break
            }
        }
        try runReportingErrors {
            let info = try probed?.get()
            if `repeat` > 1 {
                let ms =
                    Double(DispatchTime.now().uptimeNanoseconds - started.uptimeNanoseconds) / 1e6 / Double(`repeat`)
                FileHandle.standardError.write(
                    Data(
                        String(format: "probe%@: %d runs, %.2f ms each\n", isolated ? " (isolated)" : "", `repeat`, ms)
                            .utf8))
            }
            guard let info else { return }
            if json {
                print(try JSON.encode(info))
                return
            }
            let v = info.video
            print("file:       \(info.path) (\(info.fileSize) bytes)")
            print("container:  \(info.containerLongName) [\(info.container)]")
            print(
                String(format: "duration:   %.3f s", info.duration) + (info.bitRate.map { ", \($0 / 1000) kb/s" } ?? "")
            )
            print(
                "video:      #\(v.index) \(v.codec)\(v.profile.map { " (\($0))" } ?? ""), \(v.codedWidth)x\(v.codedHeight) coded, \(v.displayWidth)x\(v.displayHeight) displayed, rotation \(v.rotation)°"
            )
            print(
                "            \(v.pixelFormat), \(v.bitDepth)-bit, " + String(format: "%.3f fps", v.frameRate)
                    + (v.isVariableFrameRate ? " (variable)" : " (constant)") + ", transfer \(v.colorTransfer)"
                    + (v.isHDR ? " (HDR)" : ""))
            if info.audio.isEmpty { print("audio:      none") }
            for a in info.audio {
                print("audio:      #\(a.index) \(a.codec), \(a.sampleRate) Hz, \(a.channels) ch (\(a.channelLayout))")
            }
        }
    }
}

extension ProbeCommand {
    func probeOnce() async throws(MediaError) -> MediaInfo {
        guard isolated else { return try Probe.probe(file) }
        let settings = IsolationSettings(
            executable: IsolationSettings.defaultExecutable(), memoryBytes: 4 << 30, niceness: 0)
        let path = URL(fileURLWithPath: file).path
        switch await MediaChild.run(
            .probe(path), settings: settings, access: ChildAccess(readable: [path]), wallSeconds: 30, cpuSeconds: 30,
            cancellation: nil,
            logger: Logger(label: "moments"))
        {
        case .answered(let message):
            if let info = message.probe { return info }
            throw MediaError(
                .ffmpeg, operation: "isolated probe", path: file, detail: "the child answered without a probe")
        case .failed(let error): throw error
        case .cancelled: throw MediaError(.cancelled, operation: "isolated probe", path: file, detail: "cancelled")
        case .abnormal(let reason, _), .sandboxUnavailable(let reason):
            throw MediaError(.ffmpeg, operation: "isolated probe", path: file, detail: reason)
        }
    }
}

enum JSON {
    static func encode<T: Encodable>(_ value: T) throws -> String {
        let encoder = JSONEncoder()
        encoder.keyEncodingStrategy = .convertToSnakeCase
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        return String(decoding: try encoder.encode(value), as: UTF8.self)
    }
}
