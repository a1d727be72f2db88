import Highlight
import MediaConfig
import ArgumentParser
import Configuration
import Foundation
import MomentsConfig

/// Configuration for the media commands: Config/moments.json (or MOMENTS_CONFIG) and the
/// environment, read once at the start of a command. A malformed file is a one-line error and
/// exit status 1.
struct CLIConfig {
    let reader: ConfigReader

    static func load() async throws -> CLIConfig {
        do {
            return CLIConfig(reader: try await MomentsConfiguration.reader())
        } catch {
            FileHandle.standardError.write(Data("moments: \(error)\n".utf8))
            throw ExitCode.failure
        }
    }

    func mediaDefaults() -> MediaDefaults { MediaDefaults(reader: reader) }

    /// STORAGE_PATH (or storage.path) / cache / analysis.
    func analysisCacheDirectory() -> String {
        (ServiceSettings(reader: reader).storagePath as NSString).appendingPathComponent("cache/analysis")
    }
}
