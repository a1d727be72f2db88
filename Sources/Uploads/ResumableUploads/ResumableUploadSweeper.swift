import ServiceLifecycle

/// Runs in every API process (the processes that hold uploads' bytes): expires abandoned
/// resumable uploads and removes staged bytes no upload needs, every `storage.sweepIntervalSeconds`;
/// at shutdown, waits for answered appends to record their bytes.
public struct ResumableUploadSweeper: Service {
    let uploads: ResumableUploads
    let intervalSeconds: Double

    public init(uploads: ResumableUploads, intervalSeconds: Double) {
        self.uploads = uploads; self.intervalSeconds = intervalSeconds
    }

    public func run() async throws {
        while !Task.isCancelled && !Task.isShuttingDownGracefully {
            await uploads.sweep()
            try? await cancelWhenGracefulShutdown { try await Task.sleep(for: .seconds(max(1, intervalSeconds))) }
        }
        // Appends that have answered finish recording their bytes before the process ends.
        await uploads.settleAll()
        // Open parts not yet in the bucket (S3) are written, so another host can continue them.
        await uploads.staging.flushPending()
    }
}
