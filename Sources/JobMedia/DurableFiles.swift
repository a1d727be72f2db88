import Foundation

/// fsync for files and folders: what the database records as existing must be on disk first.
public enum DurableFiles {
    /// Flushes a file's data to disk. A missing file is not an error (nothing to flush).
    public static func sync(_ path: String) throws {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        if fd < 0 {
            if errno == ENOENT { return }
            throw DurableFileError(operation: "open", errno: errno)
        }
        defer { close(fd) }
        if fsync(fd) != 0 { throw DurableFileError(operation: "fsync", errno: errno) }
    }

    /// Flushes a folder's entries (a file created, renamed or moved into it).
    public static func syncDirectory(_ path: String) throws {
        let fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        if fd < 0 { throw DurableFileError(operation: "open directory", errno: errno) }
        defer { close(fd) }
        if fsync(fd) != 0 { throw DurableFileError(operation: "fsync directory", errno: errno) }
    }
}

public struct DurableFileError: Error, CustomStringConvertible {
    public var operation: String
    public var errno: Int32
    public var description: String { "\(operation): \(String(cString: strerror(errno)))" }
}
