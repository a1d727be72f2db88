import ArgumentParser
import Configuration
import Dispatch
import Foundation
import MomentsConfig

/// Configuration for the synchronous media commands: Config/moments.json (or MOMENTS_CONFIG) and the
/// environment, read once. A malformed file is a one-line error and exit status 1.
enum CLIConfig {
    private final class Box: @unchecked Sendable { var result: Result<ConfigReader, any Error>? }

    static let reader: Result<ConfigReader, any Error> = {
        let box = Box()
        let done = DispatchSemaphore(value: 0)
        Task.detached {
            do { box.result = .success(try await MomentsConfiguration.reader()) } catch { box.result = .failure(error) }
            done.signal()
        }
        done.wait()
        return box.result!
    }()

    static func get() throws -> ConfigReader {
        switch reader {
        case .success(let reader): return reader
        case .failure(let error):
            FileHandle.standardError.write(Data("moments: \(error)\n".utf8))
            throw ExitCode.failure
        }
    }

    static func mediaDefaults() throws -> MediaDefaults { MediaDefaults(reader: try get()) }

    /// STORAGE_PATH (or storage.path) / cache / analysis.
    static func analysisCacheDirectory() throws -> String {
        (ServiceSettings(reader: try get()).storagePath as NSString).appendingPathComponent("cache/analysis")
    }
}
