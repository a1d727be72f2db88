import Configuration
import Foundation
import SystemPackage

/// Where configuration comes from, highest priority first: the process environment (a key such as
/// `http.port` is read from `HTTP_PORT`, `storage.minFreeBytes` from `STORAGE_MIN_FREE_BYTES`), then
/// Config/moments.json (or the file named by `MOMENTS_CONFIG`), then the built-in defaults each
/// settings type names.
public enum MomentsConfiguration {
    public static let defaultFile = "Config/moments.json"

    /// - Parameters:
    ///   - environment: the variables to read (the process environment by default; tests pass their own).
    ///   - file: the JSON file; when nil, `MOMENTS_CONFIG` from `environment` or Config/moments.json. A
    ///     missing file means built-in defaults; a malformed one is an error naming the file.
    ///   - accessReporter: told of every key read (tests use it to list the keys the service reads).
    public static func reader(
        environment: [String: String] = ProcessInfo.processInfo.environment,
        file: String? = nil,
        accessReporter: (any AccessReporter)? = nil
    ) async throws -> ConfigReader {
        let path = file ?? environment["MOMENTS_CONFIG"] ?? defaultFile
        let fileProvider: FileProvider<JSONSnapshot>
        do {
            fileProvider = try await FileProvider<JSONSnapshot>(filePath: FilePath(path), allowMissing: true)
        } catch {
            throw ConfigurationFileError(path: path, underlying: "\(error)")
        }
        return ConfigReader(
            providers: [
                EnvironmentVariablesProvider(environmentVariables: environment),
                fileProvider
            ], accessReporter: accessReporter)
    }
}

extension MomentsConfiguration {
    /// The configuration file the process reads (absolute), and whether it exists: said at
    /// start-up, as Config/moments.json is looked for relative to the working directory.
    public static func fileInUse(environment: [String: String] = ProcessInfo.processInfo.environment)
        -> (path: String, exists: Bool)
    {
        let path = environment["MOMENTS_CONFIG"] ?? defaultFile
        let absolute =
            path.hasPrefix("/")
            ? path : (FileManager.default.currentDirectoryPath as NSString).appendingPathComponent(path)
        return ((absolute as NSString).standardizingPath, FileManager.default.fileExists(atPath: absolute))
    }
}

public struct ConfigurationFileError: Error, CustomStringConvertible {
    public var path: String
    public var underlying: String
    public var description: String { "\(path): invalid configuration: \(underlying)" }
}
