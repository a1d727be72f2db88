import Highlight
import MediaConfig
import Configuration
import Foundation
import MomentsConfig
import Testing

/// Config/moments.json is the built-in defaults written out: every key in it is one the service
/// reads, and reading it gives the settings that reading no file at all gives.
@Suite("Shipped configuration")
struct ShippedConfigTests {
    static let file = "Config/moments.json"

    /// Keys the file leaves out on purpose.
    static let notInFile: Set<String> = [
        // No value is the default (analyse every frame); JSON null would not read as "unset".
        "media.analysis.maxFrameRate"
    ]

    @Test func shippedFileHoldsTheDefaultOfEveryKeyItNames() async throws {
        let recorder = KeyRecorder()
        let shipped = try await MomentsConfiguration.reader(environment: [:], file: Self.file, accessReporter: recorder)
        #expect(ServiceSettings(reader: shipped) == ServiceSettings())
        #expect(PlanSettings(reader: shipped) == PlanSettings())
        #expect(AppStoreSettings(reader: shipped) == AppStoreSettings())
        #expect(OperationsSettings(reader: shipped) == OperationsSettings())
        #expect(MediaDefaults(reader: shipped) == MediaDefaults())

        let json = try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: Self.file)))
        let inFile = Self.leafKeys(json, prefix: "")
        let read = recorder.keys
        let unread = inFile.subtracting(read), unwritten = read.subtracting(inFile)
        #expect(unread.isEmpty, "keys in the file that nothing reads: \(unread.sorted())")
        #expect(unwritten == Self.notInFile, "keys read but not in the file: \(unwritten.sorted())")
    }

    /// Start-up names the file it read, absolute: Config/moments.json from the working directory,
    /// or MOMENTS_CONFIG; a missing one is said to be missing.
    @Test func startUpNamesTheConfigurationFile() {
        let cwd = FileManager.default.currentDirectoryPath
        let shipped = MomentsConfiguration.fileInUse(environment: [:])
        #expect(shipped.path == cwd + "/Config/moments.json" && shipped.exists)
        let named = MomentsConfiguration.fileInUse(environment: ["MOMENTS_CONFIG": "./Config/../Config/moments.json"])
        #expect(named.path == cwd + "/Config/moments.json" && named.exists)
        let missing = MomentsConfiguration.fileInUse(environment: ["MOMENTS_CONFIG": "/nowhere/moments.json"])
        #expect(missing.path == "/nowhere/moments.json" && !missing.exists)
    }

    /// The dotted keys of the file's values (an array is one value: `http.trustedProxies`).
    static func leafKeys(_ value: Any, prefix: String) -> Set<String> {
        guard let object = value as? [String: Any] else { return [prefix] }
        return object.reduce(into: []) { keys, entry in
            keys.formUnion(leafKeys(entry.value, prefix: prefix.isEmpty ? entry.key : "\(prefix).\(entry.key)"))
        }
    }
}

/// Every key a reader was asked for, as dotted paths.
private final class KeyRecorder: AccessReporter, @unchecked Sendable {
    private let lock = NSLock()
    private var recorded: Set<String> = []

    func report(_ event: AccessEvent) {
        let key = event.metadata.key.components.joined(separator: ".")
        lock.withLock { _ = recorded.insert(key) }
    }

    var keys: Set<String> { lock.withLock { recorded } }
}
