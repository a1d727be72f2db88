import Store
import Requests

/// What the intake asks of a received file before it becomes a job: its description, or the
/// refusal that says why it cannot. `UploadInspector` answers from an isolated child process; a
/// router test answers from memory.
public protocol UploadProbe: Sendable {
    func inspect(_ path: String) async throws(Refusal) -> JobInput
}

extension UploadInspector: UploadProbe {}
