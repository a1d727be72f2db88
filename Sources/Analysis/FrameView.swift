/// One analysis picture as the analysers see it: planar 8-bit YUV 4:2:0, borrowed from whoever
/// decoded or synthesised it. Valid only during the call that receives it; analysers copy what
/// they need to keep into their own preallocated buffers.
public struct FrameView {
    /// Presentation time in seconds.
    public let time: Double
    public let width: Int
    public let height: Int
    public let luma: UnsafePointer<UInt8>
    public let lumaStride: Int
    public let chromaWidth: Int
    public let chromaHeight: Int
    public let cb: UnsafePointer<UInt8>
    public let cr: UnsafePointer<UInt8>
    public let chromaStride: Int

    public init(
        time: Double, width: Int, height: Int, luma: UnsafePointer<UInt8>, lumaStride: Int,
        chromaWidth: Int, chromaHeight: Int, cb: UnsafePointer<UInt8>, cr: UnsafePointer<UInt8>, chromaStride: Int
    ) {
        self.time = time
        self.width = width
        self.height = height
        self.luma = luma
        self.lumaStride = lumaStride
        self.chromaWidth = chromaWidth
        self.chromaHeight = chromaHeight
        self.cb = cb
        self.cr = cr
        self.chromaStride = chromaStride
    }

    @inline(__always) public func y(_ x: Int, _ y: Int) -> UInt8 { luma[y * lumaStride + x] }
}

/// A picture owned by the caller, for tests and tools that synthesise frames.
public struct OwnedFrame {
    public var width: Int
    public var height: Int
    public var luma: [UInt8]
    public var cb: [UInt8]
    public var cr: [UInt8]

    public init(width: Int, height: Int, luma: UInt8 = 16, cb: UInt8 = 128, cr: UInt8 = 128) {
        self.width = width
        self.height = height
        self.luma = [UInt8](repeating: luma, count: width * height)
        self.cb = [UInt8](repeating: cb, count: (width / 2) * (height / 2))
        self.cr = [UInt8](repeating: cr, count: (width / 2) * (height / 2))
    }

    public subscript(x: Int, y: Int) -> UInt8 {
        get { luma[y * width + x] }
        set { luma[y * width + x] = newValue }
    }

    /// Calls `body` with a view of this frame at `time`.
    public func withView<R>(time: Double, _ body: (FrameView) throws -> R) rethrows -> R {
        try luma.withUnsafeBufferPointer { y in
            try cb.withUnsafeBufferPointer { u in
                try cr.withUnsafeBufferPointer { v in
                    try body(
                        FrameView(
                            time: time, width: width, height: height, luma: y.baseAddress!, lumaStride: width,
                            chromaWidth: width / 2, chromaHeight: height / 2, cb: u.baseAddress!,
                            cr: v.baseAddress!, chromaStride: width / 2))
                }
            }
        }
    }
}

/// How much the analysers reserve up front. A caller's `expectedFrames` comes from a file's header,
/// which may lie (a 2,000,000,000 timescale turns 10 s into billions of "frames"): reservations
/// are clamped to a few thousand frames and the arrays grow as frames actually arrive.
public enum Reservation {
    public static let maxFrames = 4_096

    /// `expected` clamped to 0...maxFrames.
    public static func frames(_ expected: Int) -> Int { min(max(0, expected), maxFrames) }
}
