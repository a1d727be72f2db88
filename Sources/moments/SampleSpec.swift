import MediaEngine
import MediaSynth

extension SynthSpec {
    /// A sample with a shot every few seconds, two flashes and beeps.
    static func sample(duration: Double, width: Int, height: Int) -> SynthSpec {
        var spec = SynthSpec()
        spec.duration = duration
        spec.width = width
        spec.height = height
        spec.cuts = stride(from: 3.0, to: duration, by: 3.7).map { $0 }
        spec.flashes = [duration * 0.3, duration * 0.7]
        spec.beeps = stride(from: 1.0, to: duration, by: 2.5).map { $0 }
        return spec
    }
}
