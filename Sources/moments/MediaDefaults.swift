import Analysis
import ArgumentParser
import Foundation
import Highlight
import MediaEngine

/// The media defaults a deployment edits in Config/moments.json (or the file named by
/// MOMENTS_CONFIG). Command-line options override them; a missing file means built-in defaults.
struct MediaDefaults: Decodable {
    struct Render: Decodable {
        var preset = "veryfast"
        var quality = "high"
        var crossfadeSeconds = 0.0
        var audioFadeSeconds = 0.01
        var maxFrameRate = 60.0
    }

    struct AnalysisDefaults: Decodable {
        var maxSide = 256
        var skipNonReferenceFrames = true
        var skipLoopFilter = true
        var maxFrameRate: Double?
        var audioSampleRate = 16_000
    }

    struct HighlightDefaults: Decodable {
        var style = "cut"
        var crossfadeSeconds = 0.25
    }

    var render = Render()
    var analysis = AnalysisDefaults()
    var highlight = HighlightDefaults()
    var weights = ScoreWeights()

    private struct File: Decodable { var media: MediaDefaults? }

    static func load() throws -> MediaDefaults {
        let path = ProcessInfo.processInfo.environment["MOMENTS_CONFIG"] ?? "Config/moments.json"
        guard let data = FileManager.default.contents(atPath: path) else { return MediaDefaults() }
        let decoder = JSONDecoder()
        decoder.keyDecodingStrategy = .convertFromSnakeCase
        do {
            return try decoder.decode(File.self, from: data).media ?? MediaDefaults()
        } catch {
            FileHandle.standardError.write(Data("moments: \(path): invalid configuration: \(error)\n".utf8))
            throw ExitCode.failure
        }
    }

    /// The highlight engine's analysis settings (thresholds keep their documented defaults).
    var analysisSettings: AnalysisSettings {
        var settings = AnalysisSettings()
        settings.maxSide = analysis.maxSide
        settings.skipNonReferenceFrames = analysis.skipNonReferenceFrames
        return settings
    }

    var analysisOptions: AnalysisOptions {
        var options = AnalysisOptions()
        options.maxSide = analysis.maxSide
        options.skipNonReferenceFrames = analysis.skipNonReferenceFrames
        options.skipLoopFilter = analysis.skipLoopFilter
        options.maxFrameRate = analysis.maxFrameRate
        options.audioSampleRate = analysis.audioSampleRate
        return options
    }
}

extension MediaDefaults.Render {
    init(from decoder: Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        preset = try c.decodeIfPresent(String.self, forKey: .preset) ?? preset
        quality = try c.decodeIfPresent(String.self, forKey: .quality) ?? quality
        crossfadeSeconds = try c.decodeIfPresent(Double.self, forKey: .crossfadeSeconds) ?? crossfadeSeconds
        audioFadeSeconds = try c.decodeIfPresent(Double.self, forKey: .audioFadeSeconds) ?? audioFadeSeconds
        maxFrameRate = try c.decodeIfPresent(Double.self, forKey: .maxFrameRate) ?? maxFrameRate
    }
    enum CodingKeys: String, CodingKey { case preset, quality, crossfadeSeconds, audioFadeSeconds, maxFrameRate }
}

extension MediaDefaults.AnalysisDefaults {
    init(from decoder: Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        maxSide = try c.decodeIfPresent(Int.self, forKey: .maxSide) ?? maxSide
        skipNonReferenceFrames = try c.decodeIfPresent(Bool.self, forKey: .skipNonReferenceFrames) ?? skipNonReferenceFrames
        skipLoopFilter = try c.decodeIfPresent(Bool.self, forKey: .skipLoopFilter) ?? skipLoopFilter
        maxFrameRate = try c.decodeIfPresent(Double.self, forKey: .maxFrameRate) ?? maxFrameRate
        audioSampleRate = try c.decodeIfPresent(Int.self, forKey: .audioSampleRate) ?? audioSampleRate
    }
    enum CodingKeys: String, CodingKey { case maxSide, skipNonReferenceFrames, skipLoopFilter, maxFrameRate, audioSampleRate }
}

extension MediaDefaults {
    init(from decoder: Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        render = try c.decodeIfPresent(Render.self, forKey: .render) ?? Render()
        analysis = try c.decodeIfPresent(AnalysisDefaults.self, forKey: .analysis) ?? AnalysisDefaults()
        highlight = try c.decodeIfPresent(HighlightDefaults.self, forKey: .highlight) ?? HighlightDefaults()
        weights = try c.decodeIfPresent(ScoreWeights.self, forKey: .weights) ?? ScoreWeights()
    }
    enum CodingKeys: String, CodingKey { case render, analysis, highlight, weights }
}
