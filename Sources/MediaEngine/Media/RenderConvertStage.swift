import CFFmpeg
import FFmpeg
import Foundation

/// The render's middle stage: turns source pictures into output pictures (tone map, scale, crop)
/// and lays crossfades; a source already in the output's form goes on untouched. Owns the
/// converter and the pictures held back for a crossfade; sound and copies pass through in order.
package final class RenderConvertStage {
    package let converter: VideoConverter
    /// The tail of the previous segment, converted, for the next segment's crossfade.
    private let hold: [Frame]
    private let queues: RenderQueues

    package init(converter: VideoConverter, crossfadeFrames: Int, queues: RenderQueues) throws(MediaError) {
        self.converter = converter
        self.queues = queues
        var held: [Frame] = []
        for _ in 0..<crossfadeFrames {
            held.append(try Frame(width: converter.width, height: converter.height, format: AV_PIX_FMT_YUV420P))
        }
        hold = held
    }

    package func run() throws(MediaError) {
        while true {
            let step = try queues.decoded.pop()
            guard case .picture(let picture) = step else {
                try queues.converted.push(step)
                if case .end = step { return }
                continue
            }
            try queues.converted.push(try convert(picture))
        }
    }

    /// The step for the encoder: the output picture, or `.held` for a picture kept back.
    private func convert(_ source: RenderPicture) throws(MediaError) -> RenderStep {
        if case .hold(let index) = source.blend {
            try converter.convert(source.frame, into: hold[index], crop: source.crop)
            queues.giveBack(source)
            return .held
        }
        if case .none = source.blend, source.crop == nil, converter.passesThrough(source.frame) {
            return .picture(source)
        }
        let output = try queues.freeOutputs.pop()
        var picture = source
        picture.frame = output
        picture.converted = true
        do {
            try converter.convert(source.frame, into: output, crop: source.crop)
        } catch {
            queues.giveBack(picture)
            throw error
        }
        queues.giveBack(source)
        if case .into(let index, let weight) = source.blend {
            VideoConverter.blend(output, with: hold[index], weight: weight)
            picture.keyframe = false
        }
        return .picture(picture)
    }
}
