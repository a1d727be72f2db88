import ArgumentParser
import Foundation
import MediaEngine

struct ProbeCommand: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "probe", abstract: "Describe a video file.")

    @Argument(help: "The video file.") var file: String
    @Flag(help: "Print JSON (snake_case keys).") var json = false

    func run() throws {
        try runReportingErrors {
            let info = try Probe.probe(file)
            if json {
                print(try JSON.encode(info))
                return
            }
            let v = info.video
            print("file:       \(info.path) (\(info.fileSize) bytes)")
            print("container:  \(info.containerLongName) [\(info.container)]")
            print(String(format: "duration:   %.3f s", info.duration) + (info.bitRate.map { ", \($0 / 1000) kb/s" } ?? ""))
            print("video:      #\(v.index) \(v.codec)\(v.profile.map { " (\($0))" } ?? ""), \(v.codedWidth)x\(v.codedHeight) coded, \(v.displayWidth)x\(v.displayHeight) displayed, rotation \(v.rotation)°")
            print("            \(v.pixelFormat), \(v.bitDepth)-bit, " + String(format: "%.3f fps", v.frameRate)
                  + (v.isVariableFrameRate ? " (variable)" : " (constant)") + ", transfer \(v.colorTransfer)" + (v.isHDR ? " (HDR)" : ""))
            if info.audio.isEmpty { print("audio:      none") }
            for a in info.audio {
                print("audio:      #\(a.index) \(a.codec), \(a.sampleRate) Hz, \(a.channels) ch (\(a.channelLayout))")
            }
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
