import Foundation

/// Runs curl (or another tool) on a thread of its own; a missing tool fails the test loudly.
enum Curl {
    static func run(_ arguments: [String]) async throws -> String {
        try await process("/usr/bin/env", ["curl"] + arguments)
    }

    static func process(_ executable: String, _ arguments: [String]) async throws -> String {
        try await RawConnection.offPool {
            let process = Process()
            process.executableURL = URL(fileURLWithPath: executable)
            process.arguments = arguments
            let out = Pipe(), err = Pipe()
            process.standardOutput = out
            process.standardError = err
            try process.run()
            let data = out.fileHandleForReading.readDataToEndOfFile()
            let errors = err.fileHandleForReading.readDataToEndOfFile()
            process.waitUntilExit()
            guard process.terminationStatus == 0 else {
                throw ToolFailure(
                    command: ([executable] + arguments).joined(separator: " "), status: process.terminationStatus,
                    stderr: String(decoding: errors, as: UTF8.self))
            }
            return String(decoding: data, as: UTF8.self)
        }
    }

    /// A header of the last response in curl's -i/-I output.
    static func header(_ name: String, in output: String) -> String? {
        var found: String?
        for line in output.components(separatedBy: "\r\n") {
            let parts = line.split(separator: ":", maxSplits: 1)
            if parts.count == 2, parts[0].lowercased() == name.lowercased() {
                found = parts[1].trimmingCharacters(in: .whitespaces)
            }
        }
        return found
    }

    struct ToolFailure: Error, CustomStringConvertible {
        var command: String
        var status: Int32
        var stderr: String
        var description: String { "\(command) exited with \(status): \(stderr)" }
    }
}
