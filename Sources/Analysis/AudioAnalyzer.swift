import Foundation

/// Short-term loudness, onsets and silence from mono PCM, and the quiet points where a cut may land.
///
/// - loudness: RMS level in dBFS per `tick` (100 ms), and per `fineTick` (20 ms) for cut placement;
/// - onsets: spectral flux (sum of rises of the log-magnitude spectrum, 512-point FFT every 256
///   samples), the largest per tick — high where something starts: a hit, a shout, a note;
/// - silence: ticks below `silenceFloor` dBFS or more than `silenceBelowLoud` dB under the loud
///   parts (the 95th percentile).
public final class AudioAnalyzer {
    public struct Settings: Sendable, Codable, Equatable {
        public var tick = 0.1
        public var fineTick = 0.02
        public var fftSize = 512
        public var hop = 256
        public var silenceFloor: Float = -55
        public var silenceBelowLoud: Float = 35
        public init() {}
    }

    public struct Result: Sendable, Codable, Equatable {
        public var tick: Double
        public var fineTick: Double
        /// dBFS per tick (-100 for digital silence).
        public var loudness: [Float]
        /// Spectral flux per tick (largest in the tick), non-negative.
        public var onset: [Float]
        public var silent: [Bool]
        /// dBFS per fine tick.
        public var fineLoudness: [Float]

        /// Times of local loudness minima (fine resolution) within `radius` of `time`, quietest first.
        public func quietPoints(near time: Double, radius: Double) -> [Double] {
            guard !fineLoudness.isEmpty else { return [] }
            let lo = max(1, Int(((time - radius) / fineTick).rounded(.down)))
            let hi = min(fineLoudness.count - 2, Int(((time + radius) / fineTick).rounded(.up)))
            guard lo <= hi else { return [] }
            var minima: [(Double, Float)] = []
            for i in lo...hi where fineLoudness[i] <= fineLoudness[i - 1] && fineLoudness[i] <= fineLoudness[i + 1] {
                minima.append(((Double(i) + 0.5) * fineTick, fineLoudness[i]))
            }
            return minima.sorted { $0.1 < $1.1 }.map(\.0)
        }
    }

    public let settings: Settings
    private var rate = 16_000
    private var tickSamples = 1_600
    private var fineSamples = 320
    private var position = 0  // absolute sample index of the next sample
    private var tickSquares: [Double] = []
    private var fineSquares: [Double] = []
    private var onsets: [Float] = []
    private var window: [Float]
    private var frame: [Float]
    private var frameFill = 0
    private var real: [Float]
    private var imaginary: [Float]
    private var magnitude: [Float]
    private var previousMagnitude: [Float]
    private var hann: [Float]
    private var fft: FFT
    private var haveSpectrum = false

    public init(settings: Settings = Settings()) {
        self.settings = settings
        let n = settings.fftSize
        window = [Float](repeating: 0, count: n)
        frame = [Float](repeating: 0, count: n)
        real = [Float](repeating: 0, count: n)
        imaginary = [Float](repeating: 0, count: n)
        magnitude = [Float](repeating: 0, count: n / 2)
        previousMagnitude = [Float](repeating: 0, count: n / 2)
        hann = (0..<n).map { Float(0.5 - 0.5 * cos(2 * Double.pi * Double($0) / Double(n))) }
        fft = FFT(size: n)
    }

    /// Feeds a chunk of samples whose first sample plays at `time`.
    public func consume(_ samples: UnsafeBufferPointer<Float>, time: Double, rate: Int) {
        // Times come from a file: one no recording has (non-finite, or beyond a day) is dropped
        // rather than filled with a day of silence. The decoder's limits stop far sooner.
        guard time.isFinite, time > -86_400, time < 86_400, rate > 0, rate <= 1_000_000 else { return }
        if rate != self.rate || position == 0 {
            self.rate = rate
            tickSamples = max(1, Int(settings.tick * Double(rate)))
            fineSamples = max(1, Int(settings.fineTick * Double(rate)))
        }
        let start = Int((time * Double(rate)).rounded())
        var skip = 0
        if start > position + rate / 50 {  // a gap: silence in between
            for _ in position..<start { add(0) }
        } else if start < position {
            skip = min(samples.count, position - start)
        }
        for i in skip..<samples.count { add(samples[i]) }
    }

    private func add(_ sample: Float) {
        let t = position / tickSamples, f = position / fineSamples
        while tickSquares.count <= t { tickSquares.append(0); onsets.append(0) }
        while fineSquares.count <= f { fineSquares.append(0) }
        let s = Double(sample) * Double(sample)
        tickSquares[t] += s
        fineSquares[f] += s
        frame[frameFill] = sample
        frameFill += 1
        position += 1
        if frameFill == settings.fftSize {
            spectrum()
            // Keep the last fftSize - hop samples.
            let keep = settings.fftSize - settings.hop
            for i in 0..<keep { frame[i] = frame[i + settings.hop] }
            frameFill = keep
        }
    }

    private func spectrum() {
        let n = settings.fftSize
        for i in 0..<n { real[i] = frame[i] * hann[i]; imaginary[i] = 0 }
        fft.transform(&real, &imaginary)
        var flux: Float = 0
        for k in 0..<(n / 2) {
            let m = log1p(100 * (real[k] * real[k] + imaginary[k] * imaginary[k]).squareRoot())
            if haveSpectrum { flux += max(0, m - previousMagnitude[k]) }
            magnitude[k] = m
        }
        swap(&magnitude, &previousMagnitude)
        haveSpectrum = true
        let center = position - n / 2
        let tick = max(0, center / tickSamples)
        if tick < onsets.count { onsets[tick] = max(onsets[tick], flux / Float(n / 2)) }
    }

    public func finish() -> Result {
        let tickSamples = Double(max(1, Int(settings.tick * Double(rate))))
        let fineSamples = Double(max(1, Int(settings.fineTick * Double(rate))))
        func db(_ squares: Double, _ count: Double) -> Float {
            let rms = (squares / count).squareRoot()
            return rms > 1e-5 ? Float(20 * log10(rms)) : -100
        }
        let loudness = tickSquares.map { db($0, tickSamples) }
        let fine = fineSquares.map { db($0, fineSamples) }
        let loud = AudioAnalyzer.percentile(loudness, 0.95)
        let silent = loudness.map { $0 < settings.silenceFloor || $0 < loud - settings.silenceBelowLoud }
        return Result(
            tick: settings.tick, fineTick: settings.fineTick, loudness: loudness, onset: onsets,
            silent: silent, fineLoudness: fine)
    }

    static func percentile(_ values: [Float], _ p: Double) -> Float {
        guard !values.isEmpty else { return 0 }
        let sorted = values.sorted()
        return sorted[min(sorted.count - 1, Int(Double(sorted.count - 1) * p))]
    }
}

/// In-place iterative radix-2 FFT of a fixed power-of-two size (twiddles and bit-reversal precomputed).
struct FFT {
    let size: Int
    private let cosines: [Float]
    private let sines: [Float]
    private let reversed: [Int]

    init(size: Int) {
        precondition(size > 1 && size & (size - 1) == 0, "FFT size must be a power of two")
        self.size = size
        cosines = (0..<(size / 2)).map { Float(cos(-2 * Double.pi * Double($0) / Double(size))) }
        sines = (0..<(size / 2)).map { Float(sin(-2 * Double.pi * Double($0) / Double(size))) }
        let bits = size.trailingZeroBitCount
        reversed = (0..<size).map { i in
            var r = 0
            for b in 0..<bits where i & (1 << b) != 0 { r |= 1 << (bits - 1 - b) }
            return r
        }
    }

    func transform(_ re: inout [Float], _ im: inout [Float]) {
        for i in 0..<size where i < reversed[i] {
            re.swapAt(i, reversed[i])
            im.swapAt(i, reversed[i])
        }
        var length = 2
        while length <= size {
            let half = length / 2, step = size / length
            var start = 0
            while start < size {
                for k in 0..<half {
                    let c = cosines[k * step], s = sines[k * step]
                    let a = start + k, b = a + half
                    let tr = re[b] * c - im[b] * s, ti = re[b] * s + im[b] * c
                    re[b] = re[a] - tr
                    im[b] = im[a] - ti
                    re[a] += tr
                    im[a] += ti
                }
                start += length
            }
            length *= 2
        }
    }
}
