import CFFmpeg
import CFFmpegLog
import Foundation
import Synchronization

/// Routes FFmpeg's log into Moments: silent by default (set MOMENTS_FFMPEG_LOG=1 to see it on
/// stderr), and the last error FFmpeg logged for a registered context is kept so that a MediaError
/// can carry FFmpeg's own explanation ("moov atom not found") rather than only its error code.
public enum FFmpegLog {
    private static let lastErrors = Mutex<[UInt: String]>([:])
    private static let echo: Bool = {
        if let value = getenv("MOMENTS_FFMPEG_LOG") { return String(cString: value) != "0" }
        return false
    }()

    /// Installs the callback once; every entry point of the media layer calls this.
    public static let installed: Bool = {
        moments_log_install(sink, AV_LOG_WARNING)
        return true
    }()

    public static func register(_ context: UnsafeMutableRawPointer) {
        _ = installed
        lastErrors.withLock { $0[UInt(bitPattern: context)] = "" }
    }

    public static func unregister(_ context: UnsafeMutableRawPointer) {
        _ = lastErrors.withLock { $0.removeValue(forKey: UInt(bitPattern: context)) }
    }

    public static func lastError(for context: UnsafeMutableRawPointer) -> String? {
        lastErrors.withLock { $0[UInt(bitPattern: context)] }
    }

    private static let sink: @convention(c) (UnsafeMutableRawPointer?, Int32, UnsafePointer<CChar>?) -> Void = {
        avcl, level, text in
        guard let text else { return }
        let line = String(cString: text).trimming(" \n")
        if FFmpegLog.echo { FileHandle.standardError.write(Data("[ffmpeg] \(line)\n".utf8)) }
        guard level <= AV_LOG_ERROR, let avcl, !line.isEmpty else { return }
        let key = UInt(bitPattern: avcl)
        FFmpegLog.lastErrors.withLock { table in
            if table[key] != nil { table[key] = line }
        }
    }
}

extension String {
    public func trimming(_ set: String) -> String {
        var s = Substring(self)
        while let c = s.first, set.contains(c) { s.removeFirst() }
        while let c = s.last, set.contains(c) { s.removeLast() }
        return String(s)
    }
}
