import MediaEngine

/// A colour of the storyboard, 8 bits a channel (sRGB).
public struct StoryboardColor: Sendable, Equatable, Hashable {
    public var red: UInt8
    public var green: UInt8
    public var blue: UInt8

    public init(_ red: UInt8, _ green: UInt8, _ blue: UInt8) {
        self.red = red
        self.green = green
        self.blue = blue
    }

    /// From a `(r, g, b)` tuple.
    public init(_ rgb: (UInt8, UInt8, UInt8)) { self.init(rgb.0, rgb.1, rgb.2) }

    /// The suggested colours of the three score curves.
    public static let motion = StoryboardColor(92, 200, 255)
    public static let loudness = StoryboardColor(255, 176, 64)
    public static let quality = StoryboardColor(120, 230, 130)
    public static let people = StoryboardColor(255, 120, 190)
}

/// An RGB24 picture in memory (3 bytes a pixel, rows packed) with the few drawing operations the
/// storyboard needs: rectangles, alpha-blended bands, lines and polylines, a copy of a picture, and
/// text in `BitmapFont`. Every operation clips to the canvas, so callers may draw partly outside it.
struct Canvas {
    let width: Int
    let height: Int
    private(set) var pixels: [UInt8]

    /// A canvas filled with `background`. Sizes below 1 become 1.
    init(width: Int, height: Int, background: StoryboardColor) {
        self.width = max(1, width)
        self.height = max(1, height)
        var row = [UInt8]()
        row.reserveCapacity(self.width * 3)
        for _ in 0..<self.width {
            row.append(background.red); row.append(background.green); row.append(background.blue)
        }
        var all = [UInt8]()
        all.reserveCapacity(self.width * self.height * 3)
        for _ in 0..<self.height { all.append(contentsOf: row) }
        pixels = all
    }

    /// The colour at (x, y); nil outside the canvas.
    func pixel(_ x: Int, _ y: Int) -> StoryboardColor? {
        guard x >= 0, y >= 0, x < width, y < height else { return nil }
        let i = (y * width + x) * 3
        return StoryboardColor(pixels[i], pixels[i + 1], pixels[i + 2])
    }

    /// Sets one pixel, mixed with what is there by `alpha` (0: unchanged, 255: replaced).
    mutating func plot(_ x: Int, _ y: Int, _ color: StoryboardColor, alpha: Int = 255) {
        guard x >= 0, y >= 0, x < width, y < height, alpha > 0 else { return }
        let i = (y * width + x) * 3
        if alpha >= 255 {
            pixels[i] = color.red; pixels[i + 1] = color.green; pixels[i + 2] = color.blue
        } else {
            pixels[i] = Canvas.mix(pixels[i], color.red, alpha)
            pixels[i + 1] = Canvas.mix(pixels[i + 1], color.green, alpha)
            pixels[i + 2] = Canvas.mix(pixels[i + 2], color.blue, alpha)
        }
    }

    private static func mix(_ under: UInt8, _ over: UInt8, _ alpha: Int) -> UInt8 {
        UInt8((Int(under) * (255 - alpha) + Int(over) * alpha + 127) / 255)
    }

    /// Fills the rectangle (clipped), blended by `alpha`.
    mutating func fill(x: Int, y: Int, width w: Int, height h: Int, _ color: StoryboardColor, alpha: Int = 255) {
        let x0 = max(0, x), y0 = max(0, y)
        let x1 = min(width, x.addingReportingOverflow(max(0, w)).partialValue)
        let y1 = min(height, y.addingReportingOverflow(max(0, h)).partialValue)
        guard x0 < x1, y0 < y1, alpha > 0 else { return }
        for yy in y0..<y1 { for xx in x0..<x1 { plot(xx, yy, color, alpha: alpha) } }
    }

    /// A straight line from (x0, y0) to (x1, y1), `thickness` pixels wide (square pen).
    mutating func line(
        _ x0: Int, _ y0: Int, _ x1: Int, _ y1: Int, _ color: StoryboardColor,
        thickness: Int = 1, alpha: Int = 255
    ) {
        // Far outside the canvas: nothing to draw (also keeps the step count bounded).
        let limit = 1 << 20
        guard abs(x0) < limit, abs(y0) < limit, abs(x1) < limit, abs(y1) < limit else { return }
        let pen = max(1, min(thickness, 16)), before = (pen - 1) / 2
        let dx = abs(x1 - x0), dy = -abs(y1 - y0)
        let sx = x0 < x1 ? 1 : -1, sy = y0 < y1 ? 1 : -1
        var error = dx + dy, x = x0, y = y0
        while true {
            if pen == 1 {
                plot(x, y, color, alpha: alpha)
            } else {
                fill(x: x - before, y: y - before, width: pen, height: pen, color, alpha: alpha)
            }
            if x == x1 && y == y1 { break }
            let e2 = 2 * error
            if e2 >= dy { error += dy; x += sx }
            if e2 <= dx { error += dx; y += sy }
        }
    }

    /// Lines joining consecutive points.
    mutating func polyline(_ points: [(x: Int, y: Int)], _ color: StoryboardColor, thickness: Int = 1, alpha: Int = 255)
    {
        guard var previous = points.first else { return }
        if points.count == 1 {
            line(previous.x, previous.y, previous.x, previous.y, color, thickness: thickness, alpha: alpha)
        }
        for point in points.dropFirst() {
            line(previous.x, previous.y, point.x, point.y, color, thickness: thickness, alpha: alpha)
            previous = point
        }
    }

    /// Copies an RGB24 picture of `sourceWidth` x `sourceHeight` (rows `stride` bytes apart) with
    /// its top-left corner at (x, y), turned clockwise by `rotation` degrees (0, 90, 180 or 270)
    /// on the way. The caller guarantees `source` holds `stride * sourceHeight` bytes.
    mutating func draw(
        rgb source: UnsafePointer<UInt8>, sourceWidth: Int, sourceHeight: Int, stride: Int,
        at x: Int, _ y: Int, rotation: Int = 0
    ) {
        guard sourceWidth > 0, sourceHeight > 0, stride >= sourceWidth * 3 else { return }
        let turned = rotation == 90 || rotation == 270
        let w = turned ? sourceHeight : sourceWidth, h = turned ? sourceWidth : sourceHeight
        for dy in max(0, -y)..<max(max(0, -y), min(h, height - y)) {
            for dx in max(0, -x)..<max(max(0, -x), min(w, width - x)) {
                // The source pixel that lands at (dx, dy) of the turned picture.
                let (sx, sy): (Int, Int)
                switch rotation {
                case 90: (sx, sy) = (dy, sourceHeight - 1 - dx)
                case 180: (sx, sy) = (sourceWidth - 1 - dx, sourceHeight - 1 - dy)
                case 270: (sx, sy) = (sourceWidth - 1 - dy, dx)
                default: (sx, sy) = (dx, dy)
                }
                let s = sy * stride + sx * 3, d = ((y + dy) * width + x + dx) * 3
                pixels[d] = source[s]; pixels[d + 1] = source[s + 1]; pixels[d + 2] = source[s + 2]
            }
        }
    }

    /// Writes `text` with its top-left corner at (x, y), each font pixel `scale` x `scale`.
    /// Characters the font lacks are drawn as '?'. Returns the x just after the text.
    @discardableResult
    mutating func text(_ text: String, x: Int, y: Int, scale: Int = 1, _ color: StoryboardColor) -> Int {
        let s = max(1, scale)
        var pen = x
        for character in text {
            let rows = BitmapFont.glyph(character)
            for (row, bits) in rows.enumerated() where bits != 0 {
                for column in 0..<BitmapFont.glyphWidth where bits & (1 << (BitmapFont.glyphWidth - 1 - column)) != 0 {
                    fill(x: pen + column * s, y: y + row * s, width: s, height: s, color)
                }
            }
            pen += BitmapFont.advance * s
            if pen > width { break }
        }
        return pen
    }
}

/// A tiny hand-drawn bitmap font: 5 x 7 pixel glyphs on a 6-pixel advance, with two rows below
/// the baseline for the descenders of g, j, p, q, y and ','. Digits, a-z, A-Z, space and
/// `: . % - / ( ) , + = # ?`; anything else is shown as '?'.
enum BitmapFont {
    static let glyphWidth = 5
    /// Rows of a glyph, descenders included (the baseline is under row 6).
    static let glyphHeight = 9
    /// Height of capitals and digits.
    static let capHeight = 7
    /// Horizontal distance from one character to the next.
    static let advance = 6

    /// Width in pixels of `text` at `scale` (no trailing space).
    static func width(_ text: String, scale: Int = 1) -> Int {
        let n = text.count
        return n == 0 ? 0 : (n * advance - 1) * max(1, scale)
    }

    /// The rows of `character`, top first; bit 4 is the leftmost column.
    static func glyph(_ character: Character) -> [UInt8] {
        glyphs[character] ?? glyphs["?"] ?? []
    }

    private static let glyphs: [Character: [UInt8]] = [
        " ": [],
        "0": [0x0E, 0x11, 0x13, 0x15, 0x19, 0x11, 0x0E],
        "1": [0x04, 0x0C, 0x04, 0x04, 0x04, 0x04, 0x0E],
        "2": [0x0E, 0x11, 0x01, 0x02, 0x04, 0x08, 0x1F],
        "3": [0x1F, 0x02, 0x04, 0x02, 0x01, 0x11, 0x0E],
        "4": [0x02, 0x06, 0x0A, 0x12, 0x1F, 0x02, 0x02],
        "5": [0x1F, 0x10, 0x1E, 0x01, 0x01, 0x11, 0x0E],
        "6": [0x06, 0x08, 0x10, 0x1E, 0x11, 0x11, 0x0E],
        "7": [0x1F, 0x01, 0x02, 0x04, 0x08, 0x08, 0x08],
        "8": [0x0E, 0x11, 0x11, 0x0E, 0x11, 0x11, 0x0E],
        "9": [0x0E, 0x11, 0x11, 0x0F, 0x01, 0x02, 0x0C],
        "A": [0x0E, 0x11, 0x11, 0x1F, 0x11, 0x11, 0x11],
        "B": [0x1E, 0x11, 0x11, 0x1E, 0x11, 0x11, 0x1E],
        "C": [0x0E, 0x11, 0x10, 0x10, 0x10, 0x11, 0x0E],
        "D": [0x1C, 0x12, 0x11, 0x11, 0x11, 0x12, 0x1C],
        "E": [0x1F, 0x10, 0x10, 0x1E, 0x10, 0x10, 0x1F],
        "F": [0x1F, 0x10, 0x10, 0x1E, 0x10, 0x10, 0x10],
        "G": [0x0E, 0x11, 0x10, 0x17, 0x11, 0x11, 0x0F],
        "H": [0x11, 0x11, 0x11, 0x1F, 0x11, 0x11, 0x11],
        "I": [0x0E, 0x04, 0x04, 0x04, 0x04, 0x04, 0x0E],
        "J": [0x07, 0x02, 0x02, 0x02, 0x02, 0x12, 0x0C],
        "K": [0x11, 0x12, 0x14, 0x18, 0x14, 0x12, 0x11],
        "L": [0x10, 0x10, 0x10, 0x10, 0x10, 0x10, 0x1F],
        "M": [0x11, 0x1B, 0x15, 0x15, 0x11, 0x11, 0x11],
        "N": [0x11, 0x11, 0x19, 0x15, 0x13, 0x11, 0x11],
        "O": [0x0E, 0x11, 0x11, 0x11, 0x11, 0x11, 0x0E],
        "P": [0x1E, 0x11, 0x11, 0x1E, 0x10, 0x10, 0x10],
        "Q": [0x0E, 0x11, 0x11, 0x11, 0x15, 0x12, 0x0D],
        "R": [0x1E, 0x11, 0x11, 0x1E, 0x14, 0x12, 0x11],
        "S": [0x0F, 0x10, 0x10, 0x0E, 0x01, 0x01, 0x1E],
        "T": [0x1F, 0x04, 0x04, 0x04, 0x04, 0x04, 0x04],
        "U": [0x11, 0x11, 0x11, 0x11, 0x11, 0x11, 0x0E],
        "V": [0x11, 0x11, 0x11, 0x11, 0x11, 0x0A, 0x04],
        "W": [0x11, 0x11, 0x11, 0x15, 0x15, 0x15, 0x0A],
        "X": [0x11, 0x11, 0x0A, 0x04, 0x0A, 0x11, 0x11],
        "Y": [0x11, 0x11, 0x0A, 0x04, 0x04, 0x04, 0x04],
        "Z": [0x1F, 0x01, 0x02, 0x04, 0x08, 0x10, 0x1F],
        "a": [0x00, 0x00, 0x0E, 0x01, 0x0F, 0x11, 0x0F],
        "b": [0x10, 0x10, 0x16, 0x19, 0x11, 0x11, 0x1E],
        "c": [0x00, 0x00, 0x0E, 0x10, 0x10, 0x11, 0x0E],
        "d": [0x01, 0x01, 0x0D, 0x13, 0x11, 0x11, 0x0F],
        "e": [0x00, 0x00, 0x0E, 0x11, 0x1F, 0x10, 0x0E],
        "f": [0x06, 0x09, 0x08, 0x1C, 0x08, 0x08, 0x08],
        "g": [0x00, 0x00, 0x0F, 0x11, 0x11, 0x11, 0x0F, 0x01, 0x0E],
        "h": [0x10, 0x10, 0x16, 0x19, 0x11, 0x11, 0x11],
        "i": [0x04, 0x00, 0x0C, 0x04, 0x04, 0x04, 0x0E],
        "j": [0x02, 0x00, 0x06, 0x02, 0x02, 0x02, 0x02, 0x12, 0x0C],
        "k": [0x10, 0x10, 0x12, 0x14, 0x18, 0x14, 0x12],
        "l": [0x0C, 0x04, 0x04, 0x04, 0x04, 0x04, 0x0E],
        "m": [0x00, 0x00, 0x1A, 0x15, 0x15, 0x11, 0x11],
        "n": [0x00, 0x00, 0x16, 0x19, 0x11, 0x11, 0x11],
        "o": [0x00, 0x00, 0x0E, 0x11, 0x11, 0x11, 0x0E],
        "p": [0x00, 0x00, 0x1E, 0x11, 0x11, 0x11, 0x1E, 0x10, 0x10],
        "q": [0x00, 0x00, 0x0F, 0x11, 0x11, 0x11, 0x0F, 0x01, 0x01],
        "r": [0x00, 0x00, 0x16, 0x19, 0x10, 0x10, 0x10],
        "s": [0x00, 0x00, 0x0F, 0x10, 0x0E, 0x01, 0x1E],
        "t": [0x08, 0x08, 0x1C, 0x08, 0x08, 0x09, 0x06],
        "u": [0x00, 0x00, 0x11, 0x11, 0x11, 0x13, 0x0D],
        "v": [0x00, 0x00, 0x11, 0x11, 0x11, 0x0A, 0x04],
        "w": [0x00, 0x00, 0x11, 0x11, 0x15, 0x15, 0x0A],
        "x": [0x00, 0x00, 0x11, 0x0A, 0x04, 0x0A, 0x11],
        "y": [0x00, 0x00, 0x11, 0x11, 0x11, 0x11, 0x0F, 0x01, 0x0E],
        "z": [0x00, 0x00, 0x1F, 0x02, 0x04, 0x08, 0x1F],
        ":": [0x00, 0x0C, 0x0C, 0x00, 0x0C, 0x0C, 0x00],
        ".": [0x00, 0x00, 0x00, 0x00, 0x00, 0x0C, 0x0C],
        ",": [0x00, 0x00, 0x00, 0x00, 0x00, 0x0C, 0x04, 0x08],
        "%": [0x18, 0x19, 0x02, 0x04, 0x08, 0x13, 0x03],
        "-": [0x00, 0x00, 0x00, 0x1F, 0x00, 0x00, 0x00],
        "+": [0x00, 0x04, 0x04, 0x1F, 0x04, 0x04, 0x00],
        "=": [0x00, 0x00, 0x1F, 0x00, 0x1F, 0x00, 0x00],
        "/": [0x01, 0x01, 0x02, 0x04, 0x08, 0x10, 0x10],
        "(": [0x02, 0x04, 0x08, 0x08, 0x08, 0x04, 0x02],
        ")": [0x08, 0x04, 0x02, 0x02, 0x02, 0x04, 0x08],
        "#": [0x0A, 0x0A, 0x1F, 0x0A, 0x1F, 0x0A, 0x0A],
        "?": [0x0E, 0x11, 0x01, 0x02, 0x04, 0x00, 0x04]
    ]
}
