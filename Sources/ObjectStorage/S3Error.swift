/// A failed S3 request: the HTTP status with the S3 error code and message from the XML error body.
/// Carries no credentials and no signature.
public struct S3Error: Error, Sendable, Equatable, CustomStringConvertible {
    /// The operation that failed: `PutObject`, `GetObject`, `UploadPart`...
    public var operation: String
    /// The HTTP status (0 when no response was received).
    public var status: Int
    /// S3's error code: `NoSuchKey`, `SignatureDoesNotMatch`, `SlowDown`... nil when the body had none.
    public var code: String?
    public var message: String?
    public var requestId: String?
    public var key: String?

    public init(
        operation: String, status: Int, code: String? = nil, message: String? = nil, requestId: String? = nil,
        key: String? = nil
    ) {
        self.operation = operation
        self.status = status
        self.code = code
        self.message = message
        self.requestId = requestId
        self.key = key
    }

    public var description: String {
        var text = "S3 \(operation) failed with HTTP \(status)"
        if let code { text += " \(code)" }
        if let message, !message.isEmpty { text += ": \(message)" }
        if let key { text += " (key \(key))" }
        if let requestId { text += " [request \(requestId)]" }
        return text
    }

    /// Worth retrying: server errors and throttling (`429`, `503 SlowDown`); never other 4xx.
    public var isRetryable: Bool { Self.isRetryable(status: status) }

    public static func isRetryable(status: Int) -> Bool {
        status >= 500 || status == 429
    }
}
