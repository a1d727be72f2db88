import Foundation
import Isolation
import JobMedia
import MomentsConfig
import Store
import Synchronization

/// Whether this process can take work: the store writable, the storage writable (and the bucket
/// answering), free disk above the floor.
public final class Readiness: Sendable {
    let store: any StoreHealth
    let layout: StorageLayout
    let mediaStorage: any MediaStorage
    let settings: ServiceSettings
    let clock: @Sendable () -> Date

    public init(
        store: any StoreHealth, layout: StorageLayout, mediaStorage: any MediaStorage, settings: ServiceSettings,
        clock: @escaping @Sendable () -> Date = { Date() }
    ) {
        self.store = store
        self.layout = layout
        self.mediaStorage = mediaStorage
        self.settings = settings
        self.clock = clock
    }

    public struct Check: Sendable, Codable, Equatable {
        public var ok: Bool
        public var detail: String
    }

    /// `check()`, answered from the last check when it is younger than `maxAge` seconds, so a
    /// caller polling /ready does not write to the database and the disk on every call.
    public func cachedReadiness(maxAge: TimeInterval) async -> [String: Check] {
        let now = clock()
        if maxAge > 0, let (at, checks) = readinessCache.withLock({ $0 }), now.timeIntervalSince(at) >= 0,
            now.timeIntervalSince(at) < maxAge
        {
            return checks
        }
        let checks = await check()
        readinessCache.withLock { $0 = (now, checks) }
        return checks
    }

    private let readinessCache = Mutex<(Date, [String: Check])?>(nil)

    /// Database writable, storage writable, free disk above the floor.
    public func check() async -> [String: Check] {
        var checks: [String: Check] = [:]
        do {
            try await store.checkWritable(now: clock())
            checks["database"] = Check(ok: true, detail: "\(store.engine) writable")
        } catch {
            checks["database"] = Check(ok: false, detail: "not writable: \(error)")
        }
        let probe = layout.uploadsDirectory + "/.ready-\(UUID().uuidString)"
        if FileManager.default.createFile(atPath: probe, contents: Data("ok".utf8)) {
            try? FileManager.default.removeItem(atPath: probe)
            checks["storage"] = Check(ok: true, detail: "writable")
        } else {
            checks["storage"] = Check(ok: false, detail: "cannot write under \(layout.root)")
        }
        if checks["storage"]?.ok == true, let remote = await mediaStorage.readiness() {
            checks["storage"] = Check(ok: remote.ok, detail: remote.detail)
        }
        // A sandbox that is incomplete takes no upload and runs no job (`IsolationLayer`).
        let allowed = Set(settings.allowWeakerIsolation.compactMap(IsolationLayer.init(rawValue:)))
        if let problem = IsolationLayer.problem(allowing: allowed) {
            checks["isolation"] = Check(ok: false, detail: problem)
        } else {
            checks["isolation"] = Check(ok: true, detail: "complete" + (allowed.isEmpty ? "" : ", allowing weaker \(allowed.map(\.rawValue).sorted())"))
        }
        if let free = layout.freeBytes() {
            let ok = free >= settings.minFreeBytes
            checks["disk"] = Check(
                ok: ok, detail: "\(free / 1_000_000) MB free, floor \(settings.minFreeBytes / 1_000_000) MB")  // not for users: the operator's /ready
        } else {
            checks["disk"] = Check(ok: false, detail: "cannot read free space of \(layout.root)")
        }
        return checks
    }
}
