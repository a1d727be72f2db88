import Foundation
import MediaVocabulary

/// The reframe of one clip (a crop window of the source filling the output frame) expressed as
/// a 2-D transform an editor can apply.
///
/// The source is first conformed to the output frame with "fit" (scaled uniformly to fit inside
/// it, centred: Final Cut Pro's default spatial conform), then scaled by `scale` about its centre
/// and moved by `position`. With these values the crop window's centre lands on the frame's centre
/// and the window covers the frame (exactly when the window has the output's aspect ratio, and
/// just covering it otherwise).
struct Reframe: Equatable {
    /// Uniform scale relative to the fitted picture.
    var scale: Double
    /// Offset of the picture's centre from the frame's centre, in output pixels, x right, y up.
    var offsetX: Double
    var offsetY: Double
    /// The same offset as FCPXML expresses positions: percent of the output frame height.
    var positionX: Double
    var positionY: Double

    init(crop: CropWindow, sourceWidth: Int, sourceHeight: Int, outputWidth: Int, outputHeight: Int) {
        let sw = Double(max(1, sourceWidth)), sh = Double(max(1, sourceHeight))
        let ow = Double(max(1, outputWidth)), oh = Double(max(1, outputHeight))
        let fit = min(ow / sw, oh / sh)
        let windowW = crop.width * sw * fit, windowH = crop.height * sh * fit
        let s = max(ow / windowW, oh / windowH)
        scale = s
        // The window's centre relative to the picture's centre, in scaled output pixels (y down).
        let dx = (crop.x + crop.width / 2 - 0.5) * sw * fit * s
        let dy = (crop.y + crop.height / 2 - 0.5) * sh * fit * s
        offsetX = -dx
        offsetY = dy
        positionX = -dx / oh * 100
        positionY = dy / oh * 100
    }
}
