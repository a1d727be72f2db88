import Foundation
import HTTPTypes
import HTTPEdge
import Hummingbird
import MomentsConfig
import Store
import Wording

/// The account's phones for push notifications: register (or change the environment of) a device
/// token with PUT, list, remove.
struct DeviceController {
    let devices: any PushRepository
    let settings: PushSettings
    /// Whether this process can send pushes (an APNs key is configured).
    let pushEnabled: Bool
    let clock: @Sendable () -> Date

    func addRoutes(to group: RouterGroup<AppRequestContext>, table: RouteTable) {
        table.add(.put, "/api/v1/account/devices/:token", on: group, use: register)
        table.add(.get, "/api/v1/account/devices", on: group, use: list)
        table.add(.delete, "/api/v1/account/devices/:token", on: group, use: remove)
    }

    /// Largest registration body read (`{"environment": "production"}` is 29 bytes).
    static let maxBodyBytes = 1024

    /// PUT /api/v1/account/devices/{token} {"environment": "production"|"sandbox"}: 201 when the
    /// device is new to the account, 200 when it was known (its environment updated).
    @Sendable func register(_ request: Request, context: AppRequestContext) async throws -> EditedResponse<DeviceView> {
        let account = try context.requireAccount()
        let token = try Self.token(context)
        guard pushEnabled else {
            throw Problem(
                .serviceUnavailable, code: "push_unavailable", title: Say.Title.pushOff,
                detail:
                    Say.pushUnavailable
            )
        }
        let body: ByteBuffer
        do {
            body = try await request.body.collect(upTo: Self.maxBodyBytes)
        } catch {
            throw Problem(
                .contentTooLarge, code: "body_too_large",
                detail: Say.deviceBodyTooLarge)
        }
        guard let object = try? JSONSerialization.jsonObject(with: Data(body.readableBytesView)) as? [String: Any]
        else {
            throw Problem.badRequest(
                "invalid_json", Say.deviceBodyNotAnObject)
        }
        if object.keys.contains(where: { $0 != "environment" }) {
            throw Problem.badRequest("unknown_field", Say.deviceUnknownField)
        }
        guard let name = object["environment"] as? String, let environment = PushEnvironment(rawValue: name) else {
            throw Problem(
                .unprocessableContent, code: "invalid_environment",
                detail:
                    Say.invalidPushEnvironment
            )
        }
        let limit = settings.maxDevicesPerAccount
        switch try await devices.registerDevice(
            accountId: account.id, token: token, environment: environment, limit: limit,
            now: clock())
        {
        case .created(let device):
            return EditedResponse(status: .created, response: DeviceView(device))
        case .updated(let device):
            return EditedResponse(status: .ok, response: DeviceView(device))
        case .limitReached(let limit):
            throw Problem(
                .conflict, code: "device_limit", title: Say.Title.tooManyDevices,
                detail:
                    Say.tooManyDevices(limit: limit),
                extensions: ["limit": .int(limit)])
        }
    }

    /// GET /api/v1/account/devices: the account's devices, oldest first.
    @Sendable func list(_ request: Request, context: AppRequestContext) async throws -> DeviceListView {
        let account = try context.requireAccount()
        let devices = try await devices.devices(accountId: account.id)
        return DeviceListView(
            devices: devices.map(DeviceView.init), limit: settings.maxDevicesPerAccount,
            pushEnabled: pushEnabled)
    }

    /// DELETE /api/v1/account/devices/{token}: no more pushes to it (those pending are given up).
    @Sendable func remove(_ request: Request, context: AppRequestContext) async throws -> Response {
        let account = try context.requireAccount()
        let token = try Self.token(context)
        guard try await devices.deleteDevice(accountId: account.id, token: token, now: clock()) else {
            throw Problem(
                .notFound, code: "device_not_found", title: Say.Title.deviceNotFound,
                detail: Say.deviceNotFound)
        }
        return Response(status: .noContent)
    }

    /// The path's token: exactly 64 hexadecimal characters (APNs device tokens are 32 bytes), lowercased.
    static func token(_ context: AppRequestContext) throws -> String {
        guard let text = context.parameters.get("token"), let token = PushDevice.canonicalToken(text) else {
            throw Problem(
                .unprocessableContent, code: "invalid_device_token",
                detail:
                    Say.invalidDeviceToken)
        }
        return token
    }
}

struct DeviceView: ResponseEncodable {
    var token: String
    var environment: String
    var createdAt: Date
    var updatedAt: Date

    enum CodingKeys: String, CodingKey { case token, environment, createdAt = "created_at", updatedAt = "updated_at" }

    init(_ device: PushDevice) {
        token = device.token; environment = device.environment.rawValue; createdAt = device.createdAt;
        updatedAt = device.updatedAt
    }
}

struct DeviceListView: ResponseEncodable {
    var devices: [DeviceView]
    /// Devices the account may have.
    var limit: Int
    /// False when the server has no APNs key (nothing is pushed).
    var pushEnabled: Bool

    enum CodingKeys: String, CodingKey { case devices, limit, pushEnabled = "push_enabled" }
}
