import Crypto
import FFmpeg
import Foundation
import MediaEngine

/// Analysis results on disk, keyed by the input's content hash (SHA-256 of the file) and a hash
/// of the analysis settings, so the same upload is never analysed twice for the same settings —
/// whatever its name, and however often it is re-rendered at another length or quality.
public struct AnalysisCache: Sendable {
    public let directory: String
    /// Where new entries are written: `directory`, or a folder of their own (a job's child reads
    /// its account's cache but writes only its job's folder; the worker moves the entry in after).
    public let storeDirectory: String
    /// Bumped when the analysis output changes meaning, so old entries are not reused.
    public static let formatVersion = 5

    public init(directory: String, storeDirectory: String? = nil) {
        self.directory = directory
        self.storeDirectory = storeDirectory ?? directory
    }

    public func key(for path: String, settings: AnalysisSettings) throws(MediaError) -> String {
        let content = try AnalysisCache.contentHash(path)
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        let settingsData = (try? encoder.encode(settings)) ?? Data()
        var hasher = SHA256()
        hasher.update(data: settingsData)
        hasher.update(data: Data("v\(AnalysisCache.formatVersion)".utf8))
        let settingsHash = hasher.finalize().prefix(8).map { String(format: "%02x", $0) }.joined()
        return "\(content)-\(settingsHash)"
    }

    public func load(key: String) -> VideoAnalysis? {
        guard let data = FileManager.default.contents(atPath: file(key)) else { return nil }
        return try? JSONDecoder().decode(VideoAnalysis.self, from: data)
    }

    public func store(_ analysis: VideoAnalysis, key: String) {
        do {
            try FileManager.default.createDirectory(atPath: storeDirectory, withIntermediateDirectories: true)
            let data = try JSONEncoder().encode(analysis)
            let path = (storeDirectory as NSString).appendingPathComponent("\(key).json")
            try data.write(to: URL(fileURLWithPath: path), options: .atomic)
        } catch {
            // A cache that cannot be written only costs time next run.
        }
    }

    private func file(_ key: String) -> String { (directory as NSString).appendingPathComponent("\(key).json") }

    /// SHA-256 of the file's bytes, read in 1 MiB blocks.
    public static func contentHash(_ path: String) throws(MediaError) -> String {
        guard let handle = FileHandle(forReadingAtPath: path) else {
            throw MediaError(.fileNotFound, operation: "hash", path: path, detail: "cannot open the file")
        }
        defer { try? handle.close() }
        var hasher = SHA256()
        while true {
            let block: Data
            do { block = try handle.read(upToCount: 1 << 20) ?? Data() } catch {
                throw MediaError(
                    .io, operation: "hash", path: path, detail: "cannot read the file: \(error.localizedDescription)")
            }
            if block.isEmpty { break }
            hasher.update(data: block)
        }
        return hasher.finalize().map { String(format: "%02x", $0) }.joined()
    }
}
