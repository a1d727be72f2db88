import Crypto
import NIOCore

extension ResumableUploads {
    /// A checksum the client sent for an append's bytes (tus checksum extension).
    public struct Checksum: Sendable {
        public enum Algorithm: String, Sendable, CaseIterable { case sha1, sha256, md5 }
        public var algorithm: Algorithm
        public var digest: [UInt8]

        public init(algorithm: Algorithm, digest: [UInt8]) { self.algorithm = algorithm; self.digest = digest }
    }
}

/// The running digest of an append's bytes.
struct Hasher {
    private enum State { case sha1(Insecure.SHA1), sha256(SHA256), md5(Insecure.MD5) }
    private var state: State

    init(_ algorithm: ResumableUploads.Checksum.Algorithm) {
        switch algorithm {
        case .sha1: state = .sha1(Insecure.SHA1())
        case .sha256: state = .sha256(SHA256())
        case .md5: state = .md5(Insecure.MD5())
        }
    }

    mutating func update(_ bytes: ByteBufferView) {
        bytes.withUnsafeBytes { raw in
            switch state {
            case .sha1(var h): h.update(bufferPointer: raw); state = .sha1(h)
            case .sha256(var h): h.update(bufferPointer: raw); state = .sha256(h)
            case .md5(var h): h.update(bufferPointer: raw); state = .md5(h)
            }
        }
    }

    mutating func finish() -> [UInt8] {
        switch state {
        case .sha1(let h): Array(h.finalize())
        case .sha256(let h): Array(h.finalize())
        case .md5(let h): Array(h.finalize())
        }
    }
}
