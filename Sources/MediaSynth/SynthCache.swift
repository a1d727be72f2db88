import FFmpeg
import Foundation

/// Videos already made, by spec: `make test` points `MOMENTS_SYNTH_CACHE` at a folder it empties
/// first, so a spec the tiers ask for again (the service tests run on both engine sets) is encoded
/// once per run and copied after. A video is named by a 128-bit hash of the spec's full
/// description (every stored property, nested ones included); it appears in the folder whole
/// (written aside, then renamed), so tests making the same video at once each get a complete one.
struct SynthCache {
    let folder: String

    static func fromEnvironment() -> SynthCache? {
        guard let folder = ProcessInfo.processInfo.environment["MOMENTS_SYNTH_CACHE"], !folder.isEmpty else {
            return nil
        }
        return SynthCache(folder: folder)
    }

    /// The cached video for `spec` copied to `path`, made with `encode` first when it is not there.
    func write(
        _ spec: SynthSpec, to path: String, encode: (SynthSpec, String) throws(MediaError) -> Void
    ) throws(MediaError) {
        // The container follows the file name's extension: part of the key, kept by every name.
        let ext = (path as NSString).pathExtension
        let base = (folder as NSString).appendingPathComponent(Self.name(of: spec))
        let cached = base + "." + ext
        let files = FileManager.default
        if !files.fileExists(atPath: cached) {
            try? files.createDirectory(atPath: folder, withIntermediateDirectories: true)
            let aside = base + ".\(getpid())-\(UUID().uuidString.prefix(8))." + ext
            do {
                try encode(spec, aside)
            } catch {
                try? files.removeItem(atPath: aside)
                throw error
            }
            if rename(aside, cached) != 0 { try? files.removeItem(atPath: aside) }
        }
        try? files.removeItem(atPath: path)
        do {
            try files.copyItem(atPath: cached, toPath: path)
        } catch {
            // The cache cannot serve it (a full disk, a folder gone): encode it in place.
            try encode(spec, path)
        }
    }

    /// Two FNV-1a hashes (different offset bases) of the spec's description, in hex.
    static func name(of spec: SynthSpec) -> String {
        let text = Array(String(reflecting: spec).utf8)
        func fnv(_ basis: UInt64) -> UInt64 {
            var hash = basis
            for byte in text { hash = (hash ^ UInt64(byte)) &* 0x100_0000_01b3 }
            return hash
        }
        let a = fnv(0xcbf2_9ce4_8422_2325), b = fnv(0x8422_2325_cbf2_9ce4 ^ UInt64(text.count))
        return String(a, radix: 16) + String(b, radix: 16)
    }
}
