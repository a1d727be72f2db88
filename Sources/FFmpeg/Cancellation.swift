import MediaVocabulary

extension CancellationToken {
    /// Throws `MediaError.Kind.cancelled` once the token is cancelled: the media layer's check,
    /// between packets, so an operation stops well within a second.
    public func check(_ operation: String, path: String?) throws(MediaError) {
        if isCancelled {
            throw MediaError(.cancelled, operation: operation, path: path, detail: "cancelled")
        }
    }
}
