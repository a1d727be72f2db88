// swift-tools-version: 6.0
import PackageDescription

let package = Package(
    name: "Moments",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "moments", targets: ["moments"]),
        .library(name: "MediaEngine", targets: ["MediaEngine"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.5.0"),
        .package(url: "https://github.com/apple/swift-crypto", "3.8.0"..<"5.0.0"),
    ],
    targets: [
        // Raw C binding: FFmpeg's libraries found through pkg-config, plus a shim for the C macros
        // Swift cannot import.
        .systemLibrary(
            name: "CFFmpeg",
            path: "Sources/CFFmpeg",
            pkgConfig: "libavformat",
            providers: [.apt(["libavformat-dev", "libavcodec-dev", "libavutil-dev", "libswscale-dev", "libswresample-dev", "pkg-config"])]
        ),
        // FFmpeg's log callback, formatted in C (a va_list cannot cross into Swift).
        .target(name: "CFFmpegLog", dependencies: ["CFFmpeg"]),
        // Swift media layer: owned wrappers over the C objects, probe, analysis decode, render, poster.
        .target(
            name: "MediaEngine",
            dependencies: ["CFFmpeg", "CFFmpegLog"]
        ),
        // Pure-Swift analysers (no FFmpeg): shots, motion, audio, quality, fingerprints.
        .target(name: "Analysis"),
        // One analysis pass, candidates, scoring, selection, cache; renders through MediaEngine.
        .target(
            name: "Highlight",
            dependencies: ["Analysis", "MediaEngine", .product(name: "Crypto", package: "swift-crypto")]
        ),
        // Synthetic media (test patterns, tones, cuts, flashes) written with MediaEngine's encoder.
        .target(
            name: "MediaSynth",
            dependencies: ["MediaEngine"]
        ),
        .executableTarget(
            name: "moments",
            dependencies: [
                "MediaEngine",
                "MediaSynth",
                "Highlight",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]
        ),
        .testTarget(
            name: "MediaEngineTests",
            dependencies: ["MediaEngine", "MediaSynth"]
        ),
        .testTarget(
            name: "AnalysisTests",
            dependencies: ["Analysis"]
        ),
        .testTarget(
            name: "HighlightTests",
            dependencies: ["Highlight", "Analysis", "MediaEngine", "MediaSynth"]
        ),
    ],
    swiftLanguageModes: [.v6]
)
