/// A storyboard picture's size and where its filmstrip row sits, in pixels: the row's left edge is
/// 0 s, its right edge the input's duration. The analysis report, the stored job and the API's job
/// detail all carry it (a page shows that row alone: the studio's timeline).
public struct StoryboardFrame: Sendable, Codable, Equatable {
    public var width: Int
    public var height: Int
    public var filmstrip: Box

    public struct Box: Sendable, Codable, Equatable {
        public var x: Int
        public var y: Int
        public var width: Int
        public var height: Int

        public init(x: Int, y: Int, width: Int, height: Int) {
            self.x = x; self.y = y; self.width = width; self.height = height
        }
    }

    public init(width: Int, height: Int, filmstrip: Box) {
        self.width = width; self.height = height; self.filmstrip = filmstrip
    }
}
