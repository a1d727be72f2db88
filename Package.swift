// swift-tools-version: 6.0
import PackageDescription

/// The media tests' own per-pixel loops (frame hashes, thumbnails, synthetic scenes) run on every
/// decoded frame: unoptimised they cost more than the decoding they check, so these test targets
/// are optimised in debug builds, as the media modules are.
let optimisedInDebug: [SwiftSetting] = [.unsafeFlags(["-O"], .when(configuration: .debug))]

let package = Package(
    name: "Moments",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "moments", targets: ["moments"]),
        .library(name: "MediaEngine", targets: ["MediaEngine", "AnalysisDecode", "MediaPictures"])
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.5.0"),
        .package(url: "https://github.com/apple/swift-crypto", "3.8.0"..<"5.0.0"),
        .package(url: "https://github.com/hummingbird-project/hummingbird", from: "2.28.0"),
        .package(url: "https://github.com/groue/GRDB.swift", from: "7.10.0"),
        .package(url: "https://github.com/apple/swift-configuration", from: "1.4.0"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.13.0"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.0"),
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.0"),
        .package(url: "https://github.com/apple/swift-http-types", from: "1.8.0"),
        .package(url: "https://github.com/apple/swift-nio-extras", from: "1.34.0"),
        .package(url: "https://github.com/vapor/jwt-kit", from: "5.7.0"),
        .package(url: "https://github.com/apple/swift-certificates", from: "1.15.0"),
        .package(url: "https://github.com/apple/swift-asn1", from: "1.3.0"),
        .package(url: "https://github.com/swift-server/async-http-client", from: "1.37.0"),
        .package(url: "https://github.com/vapor/postgres-nio", from: "1.33.0"),
        .package(url: "https://github.com/apple/swift-nio-ssl", from: "2.25.0"),
        .package(url: "https://github.com/apple/swift-metrics", from: "2.13.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus", from: "2.4.0")
    ],
    targets: [
        // Raw C binding: FFmpeg's libraries found through pkg-config, plus a shim for the C macros
        // Swift cannot import.
        .systemLibrary(
            name: "CFFmpeg",
            path: "Sources/CFFmpeg",
            pkgConfig: "libavformat",
            providers: [
                .apt([
                    "libavformat-dev", "libavcodec-dev", "libavutil-dev", "libswscale-dev", "libswresample-dev",
                    "pkg-config"
                ])
            ]
        ),
        // FFmpeg's log callback, formatted in C (a va_list cannot cross into Swift).
        .target(name: "CFFmpegLog", dependencies: ["CFFmpeg"]),
        // The raw layer: one Swift owner per FFmpeg C object (input, codec, frame, packet, scaler,
        // resampler, output, audio FIFO) and MediaError with FFmpeg's own text.
        // Plain data the engine and the service share (shapes, focus, kinds of media failure); no FFmpeg.
        .target(name: "MediaVocabulary"),
        // Every sentence the service says to its users (problem details, job messages, pushes), in one place.
        .target(name: "Wording", dependencies: ["MediaVocabulary"]),
        .target(
            name: "FFmpeg",
            dependencies: ["MediaVocabulary", "CFFmpeg", "CFFmpegLog"],
            swiftSettings: [.unsafeFlags(["-O"], .when(configuration: .debug))]
        ),
        // The media operations on the raw layer: probe, analysis decode, render, poster, storyboard.
        .target(
            name: "MediaEngine",
            dependencies: ["MediaVocabulary", "FFmpeg", "CFFmpeg", "CMediaKernels"],
            swiftSettings: [.unsafeFlags(["-O"], .when(configuration: .debug))]
        ),
        // The analysis decode: the plans (full, anchors, sampled) and their passes over the input.
        .target(
            name: "AnalysisDecode",
            dependencies: ["FFmpeg", "CFFmpeg", "MediaEngine"],
            swiftSettings: [.unsafeFlags(["-O"], .when(configuration: .debug))]
        ),
        // Pictures of a video: the poster, the storyboard (filmstrip, curves, PNG).
        .target(
            name: "MediaPictures",
            dependencies: ["FFmpeg", "CFFmpeg", "MediaEngine"],
            swiftSettings: [.unsafeFlags(["-O"], .when(configuration: .debug))]
        ),
        // Pure-Swift analysers (no FFmpeg): shots, motion, audio, quality, fingerprints.
        // Optimised in debug builds too, as MediaSynth: the tests' job children run these per-frame
        // loops (the jump-cut grids most) beside live servers, and unoptimised they starve.
        .target(
            name: "Analysis",
            dependencies: ["CFaceDetect"],
            swiftSettings: [.unsafeFlags(["-O"], .when(configuration: .debug))]
        ),
        // The face detector's binding: libfacedetection (YuNet) loaded with dlopen at run time, so the
        // service runs (without faces) where it is not installed; see scripts/install-facedetect.
        .target(name: "CFaceDetect"),
        // One analysis pass, candidates, scoring, selection, cache; renders through MediaEngine.
        .target(
            name: "Highlight",
            dependencies: ["AnalysisDecode", "MediaPictures", "MediaVocabulary", "FFmpeg", "Analysis", "MediaEngine", .product(name: "Crypto", package: "swift-crypto")],
            swiftSettings: [.unsafeFlags(["-O"], .when(configuration: .debug))]
        ),
        // Editable timelines of a highlight (Final Cut Pro XML, OpenTimelineIO, CMX 3600 EDL), drawn from
        // the highlight's segments (MediaVocabulary's `Segment`); Foundation otherwise.
        .target(name: "Timeline", dependencies: ["MediaVocabulary"]),
        // Synthetic media (test patterns, tones, cuts, flashes) written with MediaEngine's encoder.
        // Optimised in debug builds too: the tests generate their media with it while live servers
        // run beside them, and unoptimised pixel loops are several times slower.
        .target(
            name: "MediaSynth",
            dependencies: ["FFmpeg", "MediaEngine"],
            swiftSettings: [.unsafeFlags(["-O"], .when(configuration: .debug))]
        ),
        // Configuration: Config/moments.json with every key overridable by environment variables.
        .target(
            name: "MomentsConfig",
            dependencies: [.product(name: "Configuration", package: "swift-configuration")]
        ),
        // The media section of the configuration mapped onto the engine's defaults (the root's).
        .target(
            name: "MediaConfig",
            dependencies: [
                "MomentsConfig", "Highlight", "Analysis", "MediaEngine",
                .product(name: "Configuration", package: "swift-configuration")
            ]
        ),
        // The store's contract: the models (accounts, keys, jobs, uploads, subscriptions, webhooks,
        // pushes) and the repository protocols both engines implement; no database library.
        .target(
            name: "Store",
            dependencies: ["MediaVocabulary", "Wording", .product(name: "Crypto", package: "swift-crypto")]
        ),
        // The embedded engine: the store on SQLite (GRDB, WAL), schema by migrations.
        .target(
            name: "SQLiteStore",
            dependencies: [
                "Store", "Wording", "MediaVocabulary",
                .product(name: "GRDB", package: "GRDB.swift")
            ]
        ),
        // App Store: offline verification of Apple's signed transactions and notifications.
        .target(
            name: "AppStore",
            dependencies: [
                .product(name: "JWTKit", package: "jwt-kit"),
                .product(name: "X509", package: "swift-certificates"),
                .product(name: "SwiftASN1", package: "swift-asn1")
            ]
        ),
        // Starting the child processes that parse untrusted media: fork, limits and plumbing in C.
        .target(name: "CIsolation"),
        // Per-pixel kernels of the media path (tone mapping), compiled optimised even in debug builds.
        .target(name: "CMediaKernels", cSettings: [.unsafeFlags(["-O3"])]),
        // Telemetry: the process-wide Prometheus registry, every metric named once, JSON log lines.
        .target(
            name: "Telemetry",
            dependencies: [
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "Logging", package: "swift-log")
            ]
        ),
        // sync_file_range for resumable uploads' early write-back (needs _GNU_SOURCE).
        .target(name: "CFileSync"),
        // Where job media live (folders under Storage/, or an S3 bucket), the storage layout and signed media links.
        .target(
            name: "JobMedia",
            dependencies: [
                "Store", "MomentsConfig", "ObjectStorage", "Wording",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "Crypto", package: "swift-crypto")
            ]
        ),
        // What a client may ask for (highlight options, edits, re-cuts) and every typed refusal with its text.
        .target(
            name: "Requests",
            dependencies: [
                "MediaVocabulary", "Store", "JobMedia", "MomentsConfig", "Wording"
            ]
        ),
        // The isolated child processes that parse uploads: limits and sandbox (CIsolation), the parent's supervisor, the child's entry.
        .target(
            name: "Isolation",
            dependencies: [
                "CIsolation", "MediaVocabulary",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio")
            ]
        ),
        // Accounts, API keys, plans and quota, and the App Store verifier's configuration.
        .target(
            name: "Accounts",
            dependencies: [
                "MediaVocabulary",
                "Store", "Requests", "AppStore", "MomentsConfig", "Telemetry",
                .product(name: "Logging", package: "swift-log")
            ]
        ),
        // Webhook endpoints' deliveries: the outbox dispatcher, signed payloads, address checks against SSRF.
        .target(
            name: "Webhooks",
            dependencies: [
                "Store", "Requests", "MomentsConfig", "Telemetry", "Wording",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle")
            ]
        ),
        // Push notifications to phones through APNs: provider tokens, the client and the outbox dispatcher.
        .target(
            name: "Push",
            dependencies: [
                "Store", "MomentsConfig", "Telemetry",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "JWTKit", package: "jwt-kit"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle")
            ]
        ),
        // Uploads becoming jobs: multipart and resumable (tus, IETF) admission and staging, the probe, quota reservation, re-cuts.
        .target(
            name: "Uploads",
            dependencies: [
                "MediaVocabulary",
                "Store", "Accounts", "Requests", "JobMedia", "Isolation", "HighlightJob", "MomentsConfig", "ObjectStorage", "CFileSync", "Wording",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "_NIOFileSystem", package: "swift-nio"),
                .product(name: "Crypto", package: "swift-crypto")
            ]
        ),
        // Running jobs: the queue runner with leases and a rescuer, re-upload reuse, progress, the sweeper, job control.
        .target(
            name: "Workers",
            dependencies: [
                "MediaVocabulary", "Store", "JobMedia", "Isolation", "HighlightJob", "Requests", "MomentsConfig", "Telemetry", "Wording",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle")
            ]
        ),
        // A highlight job's media side: its request, the job child (protocol and program), the
        // recognition of re-uploads, and the result to record, in the store's terms.
        .target(
            name: "HighlightJob",
            dependencies: [
                "FFmpeg", "MediaEngine", "Highlight", "Analysis", "Isolation", "Store", "JobMedia", "Telemetry", "Wording",
                .product(name: "Logging", package: "swift-log")
            ]
        ),
        // HTTP: Hummingbird application, one controller per resource, problem+json errors.
        // The HTTP edge's plumbing, which knows no resource: the request context, problems and
        // refusals as responses, the connection guards, request ids, metrics, files and ranges.
        .target(
            name: "HTTPEdge",
            dependencies: [
                "Store", "Requests", "MomentsConfig", "Telemetry", "Wording",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdCore", package: "hummingbird"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTPTypes", package: "swift-nio-extras"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Logging", package: "swift-log")
            ]
        ),
        .target(
            name: "MomentsServer",
            dependencies: [
                "HTTPEdge", "MediaVocabulary",
                "Store", "Accounts", "Uploads", "Workers", "Webhooks", "JobMedia", "Requests", "Isolation",
                "MomentsConfig", "AppStore", "Telemetry", "ObjectStorage", "Timeline", "Wording",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdCore", package: "hummingbird"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "_NIOFileSystem", package: "swift-nio"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Logging", package: "swift-log")
            ],
            resources: [.copy("openapi.json"), .copy("Studio")]
        ),
        // S3-compatible object storage (AWS S3, Cloudflare R2, MinIO): SigV4 signing and a streaming client.
        .target(
            name: "ObjectStorage",
            dependencies: [
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "_NIOFileSystem", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log")
            ]
        ),
        // The store on PostgreSQL (postgres-nio): many API and worker processes on many hosts.
        .target(
            name: "PostgresStore",
            dependencies: [
                "Store", "Wording", "MediaVocabulary",
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle")
            ]
        ),
        .executableTarget(
            name: "moments",
            dependencies: ["AnalysisDecode", "MediaPictures", 
                "FFmpeg", "MediaEngine", "Analysis",
                "MediaSynth",
                "Highlight",
                "MomentsConfig", "MediaConfig",
                "HTTPEdge", "MomentsServer", "HighlightJob", "Accounts", "Uploads", "Webhooks", "Push",
                "Store",
                "SQLiteStore",
                "PostgresStore",
                "Workers",
                "JobMedia",
                "Isolation",
                "Telemetry",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Configuration", package: "swift-configuration"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle")
            ]
        ),
        // Probe fuzzer: a libFuzzer entry when built with `-sanitize=fuzzer -DFUZZING` (make fuzz);
        // otherwise a CLI that writes the seed corpus, replays inputs and runs a mutation loop.
        .executableTarget(
            name: "ProbeFuzz",
            dependencies: ["AnalysisDecode", "MediaEngine", "MediaSynth"]
        ),
        .testTarget(
            name: "MediaEngineTests",
            dependencies: ["AnalysisDecode", "MediaPictures", "FFmpeg", "MediaEngine", "MediaSynth"],
            swiftSettings: optimisedInDebug
        ),
        // Tests by room: each domain module's own target, run once in the unit tier.
        .testTarget(
            name: "IsolationTests",
            dependencies: ["Isolation", .product(name: "Logging", package: "swift-log")]
        ),
        .testTarget(
            name: "RequestsTests",
            dependencies: ["Requests", "Store", "MediaVocabulary"]
        ),
        .testTarget(
            name: "MomentsConfigTests",
            dependencies: [
                "MomentsConfig", "MediaConfig", "Highlight",
                .product(name: "Configuration", package: "swift-configuration")
            ]
        ),
        .testTarget(
            name: "AnalysisTests",
            dependencies: ["Analysis"],
            swiftSettings: optimisedInDebug
        ),
        .testTarget(
            name: "ServerTests",
            dependencies: [
                "AnalysisDecode", "MediaPictures", "MediaVocabulary",
                "HTTPEdge", "MomentsServer", "moments", "Store", "SQLiteStore", "Accounts", "Uploads", "Workers", "Webhooks", "Push", "JobMedia",
                "Requests", "Isolation", "HighlightJob", "MomentsConfig", "MediaConfig", "MediaSynth", "MediaEngine", "Highlight",
                "AppStore", "ObjectStorage", "PostgresStore", "Telemetry", "Timeline",
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "HummingbirdTesting", package: "hummingbird"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "JWTKit", package: "jwt-kit"),
                .product(name: "X509", package: "swift-certificates"),
                .product(name: "SwiftASN1", package: "swift-asn1"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Configuration", package: "swift-configuration")
            ]
        ),
        // The router tier: controllers and domain services on a throw-away SQLite store, no socket,
        // no child process (runs in seconds).
        .testTarget(
            name: "RouterTests",
            dependencies: [
                "HTTPEdge", "MomentsServer", "moments", "Store", "SQLiteStore", "Uploads", "Requests", "JobMedia", "MomentsConfig",
                "MediaConfig", "Highlight",
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "HummingbirdTesting", package: "hummingbird"),
                .product(name: "Logging", package: "swift-log")
            ]
        ),
        .testTarget(
            name: "ObjectStorageTests",
            dependencies: [
                "ObjectStorage",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio")
            ],
            exclude: ["make_sigv4_vectors.py"],
            resources: [.copy("sigv4_vectors.json")]
        ),
        // Store behaviours run against both engines (SQLite, and PostgreSQL from scripts/pg-test-server).
        .testTarget(
            name: "StoreTests",
            dependencies: [
                "Store", "SQLiteStore", "PostgresStore", "MediaVocabulary",
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "Logging", package: "swift-log")
            ]
        ),
        .testTarget(
            name: "TimelineTests",
            dependencies: ["Timeline", "MediaVocabulary"]
        ),
        .testTarget(
            name: "HighlightTests",
            dependencies: ["AnalysisDecode", "MediaPictures", "FFmpeg", "Highlight", "Analysis", "MediaEngine", "MediaSynth"],
            swiftSettings: optimisedInDebug
        )
    ],
    swiftLanguageModes: [.v6]
)
