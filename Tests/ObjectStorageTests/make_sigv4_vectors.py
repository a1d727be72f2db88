#!/usr/bin/env python3
"""Writes sigv4_vectors.json: expected S3 SigV4 signatures computed by botocore.

Run once (python3 Tests/ObjectStorageTests/make_sigv4_vectors.py) and commit the JSON; the Swift
tests compare AWSSignatureV4 and S3Client's URL construction against it without needing Python.

URLs are built the way an S3 client builds them: the object key percent-encoded once with `/` and
the unreserved characters kept, query names and values percent-encoded with the unreserved
characters kept. botocore's S3 signers sign the path exactly as it appears in the URL.
"""
import datetime
import json
import os
from urllib.parse import quote

import botocore.auth
from botocore.auth import S3SigV4Auth, S3SigV4QueryAuth
from botocore.awsrequest import AWSRequest
from botocore.config import Config
from botocore.credentials import Credentials

FROZEN = datetime.datetime(2026, 11, 23, 12, 0, 0)
botocore.auth.get_current_datetime = lambda: FROZEN

ACCESS_KEY = "AKIAMOMENTSTEST00001"
SECRET_KEY = "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY"
TOKEN = "IQoJb3JpZ2luX2VjEXAMPLE/TOKEN+with=chars"


def build_url(endpoint, bucket, key, path_style, query):
    scheme, rest = endpoint.split("://", 1)
    host = rest.rstrip("/")
    encoded_key = quote(key, safe="/~") if key is not None else ""
    if path_style:
        path = "/" + bucket + ("/" + encoded_key if key is not None else "")
    else:
        host = bucket + "." + host
        path = "/" + encoded_key
    url = f"{scheme}://{host}{path}"
    if query:
        url += "?" + "&".join(quote(k, safe="-_.~") + "=" + quote(v, safe="-_.~") for k, v in query)
    return url


class Capturing:
    """Wraps a botocore signer to record the canonical request it signs."""

    def __init__(self, auth):
        self.auth = auth
        self.canonical = None
        original = auth.canonical_request

        def capture(request):
            self.canonical = original(request)
            return self.canonical

        auth.canonical_request = capture


def header_case(name, method, endpoint, region, bucket, key, path_style, query=(), headers=(),
                body=None, unsigned=False, token=None):
    url = build_url(endpoint, bucket, key, path_style, list(query))
    request = AWSRequest(method=method, url=url, data=body or b"", headers=dict(headers))
    if unsigned:
        request.context["client_config"] = Config(s3={"payload_signing_enabled": False})
    auth = S3SigV4Auth(Credentials(ACCESS_KEY, SECRET_KEY, token), "s3", region)
    capturing = Capturing(auth)
    auth.add_auth(request)
    return {
        "name": name,
        "kind": "header",
        "method": method,
        "endpoint": endpoint,
        "region": region,
        "bucket": bucket,
        "key": key,
        "pathStyle": path_style,
        "query": [list(q) for q in query],
        "headers": [list(h) for h in headers],
        "payloadHash": request.headers["X-Amz-Content-SHA256"],
        "sessionToken": token,
        "expected": {
            "url": url,
            "amzDate": request.headers["X-Amz-Date"],
            "authorization": request.headers["Authorization"],
            "canonicalRequest": capturing.canonical,
        },
    }


def presign_case(name, endpoint, region, bucket, key, path_style, expires, token=None):
    url = build_url(endpoint, bucket, key, path_style, [])
    request = AWSRequest(method="GET", url=url)
    auth = S3SigV4QueryAuth(Credentials(ACCESS_KEY, SECRET_KEY, token), "s3", region, expires=expires)
    capturing = Capturing(auth)
    auth.add_auth(request)
    return {
        "name": name,
        "kind": "presign",
        "method": "GET",
        "endpoint": endpoint,
        "region": region,
        "bucket": bucket,
        "key": key,
        "pathStyle": path_style,
        "expires": expires,
        "sessionToken": token,
        "expected": {"url": request.url, "canonicalRequest": capturing.canonical},
    }


cases = [
    header_case("get, path style, local endpoint with port, unicode and reserved characters in the key",
                "GET", "http://127.0.0.1:9000", "us-east-1", "media", "videos/a b/Café ü+=~.mp4", True),
    header_case("get with a range, virtual host",
                "GET", "https://s3.us-east-1.amazonaws.com", "us-east-1", "media", "clips/x y.mp4", False,
                headers=[("Range", "bytes=5-9")]),
    header_case("put with a payload hash and content type, virtual host",
                "PUT", "https://s3.us-east-1.amazonaws.com", "us-east-1", "media", "up loads/x=y+z~.txt", False,
                headers=[("Content-Type", "text/plain")], body=b"hello, object storage"),
    header_case("put unsigned payload with a session token, path style, region auto (R2)",
                "PUT", "https://acct.r2.cloudflarestorage.com", "auto", "media", "highlights/h ü.mp4", True,
                headers=[("Content-Type", "video/mp4")], unsigned=True, token=TOKEN),
    header_case("list objects v2 with a query string, region auto",
                "GET", "https://acct.r2.cloudflarestorage.com", "auto", "media", None, True,
                query=[("list-type", "2"), ("prefix", "a b/ü"), ("max-keys", "2"),
                       ("continuation-token", "1/abc+def==")], unsigned=True),
    header_case("create multipart upload (empty query value)",
                "POST", "http://127.0.0.1:9000", "us-east-1", "media", "big/file.mp4", True,
                query=[("uploads", "")]),
    header_case("upload part, query sorted by name",
                "PUT", "http://127.0.0.1:9000", "us-east-1", "media", "big/file.mp4", True,
                query=[("uploadId", "Zx~y_z.1+2/3="), ("partNumber", "10")], unsigned=True),
    header_case("delete, virtual host, key with spaces and plus",
                "DELETE", "https://s3.eu-west-3.amazonaws.com", "eu-west-3", "media", "a+b c/d e", False),
    presign_case("presigned get, path style, local endpoint",
                 "http://127.0.0.1:9000", "us-east-1", "media", "videos/a b/Café ü+=~.mp4", True, 3600),
    presign_case("presigned get, virtual host, region auto, session token, seven days",
                 "https://acct.r2.cloudflarestorage.com", "auto", "media", "highlights/h ü.mp4", False, 604800,
                 token=TOKEN),
]

document = {
    "generator": "Tests/ObjectStorageTests/make_sigv4_vectors.py with botocore " + botocore.__version__,
    "date": "2026-11-23T12:00:00Z",
    "accessKeyId": ACCESS_KEY,
    "secretAccessKey": SECRET_KEY,
    "cases": cases,
}
out = os.path.join(os.path.dirname(os.path.abspath(__file__)), "sigv4_vectors.json")
with open(out, "w", encoding="utf-8") as f:
    json.dump(document, f, indent=2, ensure_ascii=False)
    f.write("\n")
print(f"wrote {len(cases)} cases to {out}")
