import Foundation
import HTTPTypes
import HTTPEdge
import Hummingbird
import Wording

/// The web studio: `GET /` (the page) and `GET /studio/{file}` (its CSS and JavaScript modules),
/// from the module's `Studio` resource folder, read once at start-up. Only the files found there are
/// served (the name is looked up, never joined to a path). Every answer carries a strong ETag
/// (a hash of the bytes; `If-None-Match` gets 304), `Cache-Control` (`no-cache` for the page, a
/// short max-age for its assets) and a strict Content-Security-Policy: no inline script or style,
/// nothing from another origin.
struct StudioController {
    struct Asset: Sendable {
        var body: ByteBuffer
        var etag: String
        var contentType: String
    }

    static let contentSecurityPolicy =
        "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' blob: data:; "
        + "media-src 'self' blob:; connect-src 'self'; object-src 'none'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'"
    static let assetMaxAgeSeconds = 600

    /// name → asset, for the files of the Studio folder (one level, no sub-folders).
    static let assets: [String: Asset] = {
        guard let folder = Bundle.module.url(forResource: "Studio", withExtension: nil),
            let names = try? FileManager.default.contentsOfDirectory(atPath: folder.path)
        else { return [:] }
        var assets: [String: Asset] = [:]
        for name in names {
            guard let type = contentType(of: name),
                let data = try? Data(contentsOf: folder.appendingPathComponent(name))
            else { continue }
            assets[name] = Asset(body: ByteBuffer(bytes: data), etag: "\"\(fnv1a(data))\"", contentType: type)
        }
        return assets
    }()

    static func contentType(of name: String) -> String? {
        switch (name as NSString).pathExtension {
        case "html": "text/html; charset=utf-8"
        case "css": "text/css; charset=utf-8"
        case "js": "text/javascript; charset=utf-8"
        case "svg": "image/svg+xml"
        default: nil
        }
    }

    /// FNV-1a (64 bits) of the bytes, in hex: an ETag needs only to change with the content.
    static func fnv1a(_ data: Data) -> String {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in data {
            hash ^= UInt64(byte)
            hash = hash &* 0x0000_0100_0000_01b3
        }
        return String(hash, radix: 16)
    }

    func addRoutes(to router: Router<AppRequestContext>, table: RouteTable) {
        table.add(.get, "/", on: router) { request, _ in
            try Self.respond(request, name: "index.html", cacheControl: "no-cache")
        }
        table.add(.get, "/studio/:file", on: router) { request, context in
            let name = try context.parameters.require("file")
            return try Self.respond(request, name: name, cacheControl: "public, max-age=\(Self.assetMaxAgeSeconds)")
        }
    }

    static func respond(_ request: Request, name: String, cacheControl: String) throws -> Response {
        guard let asset = assets[name] else {
            if assets.isEmpty {
                throw Problem(
                    .internalServerError, code: "internal_error", detail: Say.missingFromBuild("studio"))
            }
            throw Problem(.notFound, code: "not_found", detail: Say.noStudioFile)
        }
        var headers: HTTPFields = [
            .eTag: asset.etag,
            .cacheControl: cacheControl,
            .contentSecurityPolicy: contentSecurityPolicy,
            .xContentTypeOptions: "nosniff",
            .referrerPolicy: "no-referrer"
        ]
        if let match = request.headers[.ifNoneMatch],
            match.split(separator: ",").contains(where: {
                $0.trimmingCharacters(in: .whitespaces) == asset.etag || $0.trimmingCharacters(in: .whitespaces) == "*"
            })
        {
            return Response(status: .notModified, headers: headers)
        }
        headers[.contentType] = asset.contentType
        headers[.contentLength] = String(asset.body.readableBytes)
        return Response(status: .ok, headers: headers, body: .init(byteBuffer: asset.body))
    }
}

extension HTTPField.Name {
    static let referrerPolicy = HTTPField.Name("Referrer-Policy")!
}
