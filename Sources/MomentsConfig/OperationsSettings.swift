import Configuration
import Foundation

/// Metrics and log output. Each key's default is the value written here and in
/// Config/moments.json; the environment variable that overrides it is in the comment.
public struct OperationsSettings: Sendable, Equatable {
    public enum LogFormat: String, Sendable, Equatable {
        /// swift-log's text lines on standard error.
        case text
        /// One JSON object per line on standard error (time, level, label, message, metadata).
        case json
    }

    /// `metrics.token` / METRICS_TOKEN: when set, GET /metrics (on the API and on a worker's
    /// metrics port) needs `Authorization: Bearer <token>` and answers 401 otherwise. Empty: open
    /// (the API usually sits behind a proxy that does not forward /metrics, or a private network).
    public var metricsToken = ""
    /// `metrics.workerPort` / METRICS_WORKER_PORT: the port a worker process (`moments worker`)
    /// serves /metrics and /health on, at `http.host` (0 = no metrics server).
    public var metricsWorkerPort = 9464
    /// `log.format` / LOG_FORMAT: `text` or `json` (anything else is text).
    public var logFormat = LogFormat.text
    /// `log.level` / LOG_LEVEL: trace, debug, info, notice, warning, error or critical (anything
    /// else is info); the `--log-level` option of `moments serve` and `moments worker` wins.
    public var logLevel = "info"

    public init() {}

    public init(reader config: ConfigReader) {
        let metrics = config.scoped(to: "metrics"), log = config.scoped(to: "log")
        metrics.read("token", into: &metricsToken)
        metrics.read("workerPort", into: &metricsWorkerPort, in: 0...65535)
        logFormat = LogFormat(rawValue: log.string(forKey: "format", default: logFormat.rawValue).lowercased()) ?? .text
        log.read("level", into: &logLevel)
    }
}
