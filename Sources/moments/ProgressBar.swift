import Foundation

/// A one-line progress bar on stderr, drawn only when stderr is a terminal.
final class ProgressBar: @unchecked Sendable {
    private let label: String
    private let enabled = isatty(STDERR_FILENO) == 1
    private let lock = NSLock()
    private var lastPercent = -1

    init(_ label: String) { self.label = label }

    func update(_ fraction: Double) {
        guard enabled else { return }
        let percent = Int((min(1, max(0, fraction)) * 100).rounded(.down))
        lock.lock(); defer { lock.unlock() }
        guard percent != lastPercent else { return }
        lastPercent = percent
        let width = 30, filled = percent * width / 100
        let bar = String(repeating: "#", count: filled) + String(repeating: "-", count: width - filled)
        FileHandle.standardError.write(Data("\r\(label) [\(bar)] \(percent)%".utf8))
    }

    func finish() {
        guard enabled, lastPercent >= 0 else { return }
        FileHandle.standardError.write(Data("\n".utf8))
    }
}
