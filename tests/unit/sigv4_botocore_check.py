#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Cross-check of the sigv4 module against botocore.

Generates a fixed set of S3 requests (odd keys, query parameters, headers,
session tokens, methods, payload modes, presigned URLs), signs each one with
botocore's S3SigV4Auth / S3SigV4QueryAuth (Debian's python3-botocore) at a
fixed time, and with the C tool tests/tools/sigv4_sign.c, and compares the
Authorization values (the X-Amz-Signature values for presigned URLs).

Usage: sigv4_botocore_check.py PATH/TO/sigv4_sign
Prints every mismatch with both canonical requests, then "N passed, M
failed". Exit status 0 when all match, 1 on any mismatch, 77 (skipped) when
botocore cannot be imported.

The URL given to botocore carries the path encoded exactly as the C side
encodes it (every byte but the RFC 3986 unreserved set and '/' as %XX):
S3SigV4Auth signs the URL path as given, so both sign the same request.
"""

import datetime
import hashlib
import random
import subprocess
import sys
import types
from urllib.parse import quote, unquote

try:
    import botocore.auth
    from botocore.awsrequest import AWSRequest
    from botocore.credentials import Credentials
except ImportError as exc:  # pragma: no cover
    print(f"botocore not available ({exc}): skipped")
    sys.exit(77)

EMPTY_SHA256 = hashlib.sha256(b"").hexdigest()
UNSIGNED = "UNSIGNED-PAYLOAD"


class FixedClock(datetime.datetime):
    """botocore's signers read datetime.datetime.utcnow(); pin it."""

    pinned = datetime.datetime(2013, 5, 24)

    @classmethod
    def utcnow(cls):
        return cls.pinned


# botocore.auth uses the datetime module only as datetime.datetime.*.
botocore.auth.datetime = types.SimpleNamespace(datetime=FixedClock)


class RecordingAuth(botocore.auth.S3SigV4Auth):
    def canonical_request(self, request):
        self.last_creq = super().canonical_request(request)
        return self.last_creq


class RecordingQueryAuth(botocore.auth.S3SigV4QueryAuth):
    def canonical_request(self, request):
        self.last_creq = super().canonical_request(request)
        return self.last_creq


# --------------------------------------------------------------------------
# The requests
# --------------------------------------------------------------------------

KEYS = [
    "plain.txt",
    "a b.txt",
    "plus+sign+key",
    "100%real",
    "%2F-literal-percent",
    "tilde~file",
    "unicode/é/日本語/😀",
    "k=v&x=y",
    "what?is=this",
    "hash#tag",
    "dir//double//slash",
    "dots/./../x",
    "trailing/",
    "/leading-slash",
    "semi;colon,comma",
    "quote\"s'",
    "star*(paren)!",
    "brackets[1]{2}",
    "at@dollar$",
    "tab\tkey",
    "new\nline",
    "back\\slash",
    "caret^pipe|grave`",
    "emoji 🎉 spaced  twice",
    "ümlaut.txt",
    "日本語 ファイル.bin",
    "-._~",
    "A/B/C/",
    "+ + +",
    "<angle>",
    "x" * 1000,
    ("long/é+ " * 120)[:1000],
]

QUERIES = [
    [],
    [("uploads", None)],
    [("list-type", "2"), ("prefix", "photos/2024/é"), ("delimiter", "/"),
     ("encoding-type", "url")],
    [("list-type", "2"),
     ("continuation-token", "1ueGcxLPRx1Tr/XYExHnhbYLgveDs2J/wm36H+4vbOw=")],
    [("partNumber", "3"), ("uploadId", "VXBsb2FkIElE+/=")],
    [("versionId", "3/L4kqtJlcpXroDTDmJ+rmSpXd3dIbrHY+MTRCxf3vjVBH40Nr8X8")],
    [("max-keys", "1000"), ("prefix", "a b+c"), ("marker", "x&y=z#w?")],
    [("delete", None)],
    [("tagging", None), ("versionId", "null")],
    [("acl", None)],
    [("response-content-disposition", 'attachment; filename="a b.txt"'),
     ("response-content-type", "text/plain; charset=utf-8")],
    [("x-id", "GetObject")],
    [("prefix", "日本/"), ("start-after", "~ü"), ("fetch-owner", "true")],
    [("k", "b"), ("k", "a"), ("k", ""), ("K", "z")],
    [("a-", "1"), ("a/", "2"), ("a", "3")],
    [("empty", ""), ("uploads", None), ("x", "%41")],
]

HEADERS = [
    [],
    [("Range", "bytes=0-1023")],
    [("If-Match", '"686897696a7c876b7e"')],
    [("If-None-Match", '"abc", "def"'),
     ("If-Modified-Since", "Wed, 21 Oct 2015 07:28:00 GMT")],
    [("x-amz-meta-Odd", "  lots   of\tspace  "), ("X-Amz-Meta-empty", "")],
    [("Content-Type", "application/octet-stream"),
     ("Content-MD5", "1B2M2Y8AsgTpgAmY7PhCfg==")],
    [("x-amz-meta-dup", "a"), ("X-Amz-Meta-Dup", " b  c ")],
    [("x-amz-copy-source", "/bkt/src%20key"),
     ("x-amz-metadata-directive", "REPLACE")],
    [("x-amz-storage-class", "STANDARD_IA"),
     ("x-amz-server-side-encryption", "AES256")],
    [("Cache-Control", "no-cache"), ("x-amz-meta-unicode", "café ☕")],
    [("x-amz-tagging", "k1=v1&k2=v 2")],
    [("Content-Disposition", 'attachment; filename="x\ty.txt"'),
     ("Content-Encoding", "gzip"), ("Content-Language", "en-US")],
]

ENDPOINTS = [  # (scheme, host, region, path-style bucket or None)
    ("https", "examplebucket.s3.amazonaws.com", "us-east-1", None),
    ("https", "s3.eu-west-1.amazonaws.com", "eu-west-1", "my.bucket"),
    ("http", "localhost:9000", "us-east-1", "bkt"),
    ("http", "127.0.0.1:3900", "garage", "shard-data"),
    ("http", "[::1]:9000", "ap-southeast-2", "b"),
    ("https", "acct.r2.cloudflarestorage.com", "auto", "bucket-1"),
]

CREDS = [
    ("AKIAIOSFODNN7EXAMPLE", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", None),
    ("minioadmin", "minioadmin", None),
    ("GK31c2f218a2e44f485b94239e",
     "b892c0665f0ada8a4755dae98baa3b133590e11dae3bcc1f9d769d67f16c3835", None),
    ("ASIAXAMPLETEMPKEY123", "tmp/Secret+Key=With/Odd+Chars",
     "FQoGZXIvYXdzE//////////wEaDK+/=token+with/slashes=="),
    ("AKIDEXAMPLE", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY",
     "AQoDYXdzEPT//////////wEXAMPLEtc764bNrC9SAPBSM22wDOk4x4HIZ8j4FZTwdQ"),
]

TIMES = [
    datetime.datetime(2013, 5, 24, 0, 0, 0),
    datetime.datetime(2015, 8, 30, 12, 36, 0),
    datetime.datetime(2024, 2, 29, 23, 59, 59),
    datetime.datetime(2038, 1, 19, 3, 14, 8),
    datetime.datetime(2099, 12, 31, 0, 0, 1),
]

METHODS = ["GET", "PUT", "HEAD", "DELETE", "POST"]


def make_case(rng, i):
    """Case I: the first ones walk every list in turn, the rest mix."""
    scheme, host, region, bucket = ENDPOINTS[i % len(ENDPOINTS)]
    key = KEYS[i % len(KEYS)]
    method = METHODS[i % len(METHODS)]
    case = {
        "op": "sign",
        "method": method,
        "scheme": scheme,
        "host": host,
        "region": region,
        "path": f"/{bucket}/{key}" if bucket else f"/{key}",
        "query": QUERIES[i % len(QUERIES)],
        "headers": HEADERS[i % len(HEADERS)],
        "creds": CREDS[i % len(CREDS)],
        "time": TIMES[i % len(TIMES)],
        "body": None,
        "unsigned": False,
    }
    if i >= 64:
        case["query"] = rng.choice(QUERIES)
        case["headers"] = rng.choice(HEADERS)
        case["creds"] = rng.choice(CREDS)
        case["path"] = case["path"].rsplit("/", 1)[0] + "/" + rng.choice(KEYS)
    if method in ("PUT", "POST"):
        size = rng.choice([0, 1, 21, 4096, 65537])
        case["body"] = bytes(rng.getrandbits(8) for _ in range(size))
    case["unsigned"] = i % 3 == 1
    return case


def make_presign_case(rng, i):
    case = make_case(rng, i)
    case["op"] = "presign"
    case["method"] = ["GET", "PUT", "HEAD", "DELETE"][i % 4]
    case["body"] = None
    # botocore's presigner keeps the parameters in a dict: no duplicates.
    seen = {}
    for name, value in case["query"]:
        seen.setdefault(name, value)
    case["query"] = list(seen.items())
    case["expires"] = [1, 60, 3600, 86400, 604800][i % 5]
    return case


def all_cases():
    rng = random.Random(20150830)
    cases = [make_case(rng, i) for i in range(128)]
    cases += [make_presign_case(rng, i) for i in range(40)]
    return cases


# --------------------------------------------------------------------------
# botocore side
# --------------------------------------------------------------------------


def url_of(case):
    # quote() keeps A-Z a-z 0-9 "_.-~" and, here, '/': the C encoding.
    return f"{case['scheme']}://{case['host']}{quote(case['path'], safe='/')}"


def botocore_sign(case):
    """Returns (Authorization or X-Amz-Signature, canonical request)."""
    ak, sk, token = case["creds"]
    creds = Credentials(ak, sk, token)
    FixedClock.pinned = case["time"]
    params = [(n, "" if v is None else v) for n, v in case["query"]]
    if case["op"] == "presign":
        auth = RecordingQueryAuth(creds, "s3", case["region"],
                                  expires=case["expires"])
        params = dict(params)
    else:
        auth = RecordingAuth(creds, "s3", case["region"])
    req = AWSRequest(method=case["method"], url=url_of(case),
                     data=case["body"], params=params)
    for name, value in case["headers"]:
        req.headers[name] = value  # HTTPHeaders appends: duplicates kept
    if case["unsigned"]:
        req.context["client_config"] = types.SimpleNamespace(
            s3={"payload_signing_enabled": False})
    auth.add_auth(req)
    if case["op"] == "presign":
        return req.url.rsplit("X-Amz-Signature=", 1)[1], auth.last_creq
    return req.headers["Authorization"], auth.last_creq


# --------------------------------------------------------------------------
# C side
# --------------------------------------------------------------------------


def payload_of(case):
    if case["op"] == "presign":
        return None
    if case["unsigned"]:
        return UNSIGNED
    return hashlib.sha256(case["body"] or b"").hexdigest()


def enc(s):
    return quote(s, safe="")


def c_line(case):
    ak, sk, token = case["creds"]
    when = int(case["time"].replace(tzinfo=datetime.timezone.utc).timestamp())
    fields = [("op", case["op"]), ("method", case["method"]),
              ("host", case["host"]), ("path", case["path"]),
              ("ak", ak), ("sk", sk), ("region", case["region"]),
              ("service", "s3"), ("time", str(when))]
    if token:
        fields.append(("token", token))
    if payload_of(case):
        fields.append(("payload", payload_of(case)))
    if case["op"] == "presign":
        fields.append(("expires", str(case["expires"])))
    toks = [f"{k}={enc(v)}" for k, v in fields]
    for name, value in case["query"]:
        toks.append(f"q={enc(name)}" + ("" if value is None
                                        else f":{enc(value)}"))
    for name, value in case["headers"]:
        toks.append(f"h={enc(name)}:{enc(value)}")
    return " ".join(toks)


def c_sign_all(tool, cases):
    text = "".join(c_line(c) + "\n" for c in cases)
    res = subprocess.run([tool], input=text.encode(), capture_output=True,
                         check=False)
    if res.returncode != 0:
        sys.exit(f"{tool} failed: {res.stderr.decode(errors='replace')}")
    lines = res.stdout.decode().splitlines()
    if len(lines) != len(cases):
        sys.exit(f"{tool}: {len(lines)} answers for {len(cases)} requests")
    out = []
    for line in lines:
        parts = line.split("\t")
        if parts[0] != "OK":
            out.append((line, ""))
        elif len(parts) == 3:
            out.append((parts[1], unquote(parts[2])))
        else:
            out.append((line, ""))
    return out


def c_result(case, value):
    if case["op"] != "presign" or "X-Amz-Signature=" not in value:
        return value
    return value.rsplit("X-Amz-Signature=", 1)[1]


def main():
    if len(sys.argv) != 2:
        sys.exit(f"usage: {sys.argv[0]} PATH/TO/sigv4_sign")
    cases = all_cases()
    answers = c_sign_all(sys.argv[1], cases)
    passed = failed = 0
    for i, (case, (c_value, c_creq)) in enumerate(zip(cases, answers)):
        b_value, b_creq = botocore_sign(case)
        got = c_result(case, c_value)
        if got == b_value:
            passed += 1
            continue
        failed += 1
        print(f"MISMATCH case {i} ({case['op']} {case['method']} "
              f"{case['path']!r})\n  botocore: {b_value}\n  C:        {got}"
              f"\n--- botocore canonical request\n{b_creq}\n"
              f"--- C canonical request\n{c_creq}\n")
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
