import FFmpeg
import Foundation

/// An output written under a hidden temporary name beside its final path and renamed into place
/// only when complete, so a reader never sees half a file (the writers delete it when dropped).
package struct PartialFile {
    package let path: String
    package let temporaryPath: String

    package init(_ path: String) {
        self.path = path
        let url = URL(fileURLWithPath: path)
        temporaryPath =
            url.deletingLastPathComponent()
            .appendingPathComponent(".\(url.lastPathComponent).\(UUID().uuidString.prefix(8)).partial").path
    }

    package init(path: String, temporaryPath: String) {
        self.path = path
        self.temporaryPath = temporaryPath
    }

    package func moveIntoPlace() throws(MediaError) {
        if rename(temporaryPath, path) != 0 {
            let reason = String(cString: strerror(errno))
            throw MediaError(
                .io, operation: "rename", path: path, detail: "cannot move the output into place: \(reason)")
        }
    }
}
