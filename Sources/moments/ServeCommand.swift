import ArgumentParser
import Configuration
import Foundation
import Jobs
import Logging
import MomentsConfig
import MomentsServer
import Telemetry

/// `moments serve`: the HTTP service with its workers, until SIGTERM or SIGINT.
struct ServeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "serve",
        abstract: "Run the HTTP service (upload, status, download, cancel) and its job workers.",
        discussion: "Settings come from Config/moments.json (or MOMENTS_CONFIG) and environment variables such as HTTP_HOST, HTTP_PORT, STORAGE_PATH, JOBS_WORKERS; options given here win.")

    @Option(help: "Address to listen on (default 127.0.0.1).") var host: String?
    @Option(help: "Port to listen on (default 8000).") var port: Int?
    @Option(help: "Storage folder: database, uploads, results (default Storage).") var storage: String?
    @Option(help: "Log level: trace, debug, info, notice, warning, error, critical.") var logLevel: String?

    func run() async throws {
        let config: ConfigReader
        do {
            config = try await MomentsConfiguration.reader()
        } catch {
            FileHandle.standardError.write(Data("moments: \(error)\n".utf8))
            throw ExitCode.failure
        }
        var settings = ServiceSettings(reader: config)
        if let host { settings.host = host }
        if let port { settings.port = port }
        if let storage { settings.storagePath = storage }
        let media = MediaDefaults(reader: config)

        let operations = OperationsSettings(reader: config)
        LogOutput.bootstrap(json: operations.logFormat == .json)
        var logger = Logger(label: "moments")
        let level = logLevel ?? config.string(forKey: "log.level", default: "info")
        logger.logLevel = Logger.Level(rawValue: level) ?? .info

        let service: JobService
        do {
            service = try JobService(settings: settings, media: media, plans: PlanSettings(reader: config),
                                     appStore: AppStoreSettings(reader: config), logger: logger)
        } catch {
            FileHandle.standardError.write(Data("moments: cannot open the storage at \(settings.storagePath): \(error)\n".utf8))
            throw ExitCode.failure
        }
        logger.notice("Moments listening", metadata: ["url": "\(settings.baseURL)", "storage": "\(settings.storagePath)",
                                                      "workers": "\(settings.workers)"])
        let (app, _) = buildApplication(service: service, logger: logger, operations: operations)
        try await app.runService()
        try service.database.close()
        logger.notice("Moments stopped; database closed")
    }
}
