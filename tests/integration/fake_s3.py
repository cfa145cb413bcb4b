#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""A deliberately broken S3 endpoint for error-path tests, on 127.0.0.1.

Usage: fake_s3.py MODE PORTFILE
Writes the port it listens on into PORTFILE, then answers every request
according to MODE:
  badxml      200 with a body that is not XML
  bigbody     200 with a 70 MiB body (over the client's listing cap)
  loop        ListObjectsV2 pages that repeat the same continuation token
  slowdown    503 SlowDown to everything (counts requests in PORTFILE.count)
Stops after 120 s by itself.
"""
import http.server
import sys
import threading

MODE = sys.argv[1]
PORTFILE = sys.argv[2]
COUNT = 0
LOCK = threading.Lock()

LOOP_PAGE = (b'<?xml version="1.0" encoding="UTF-8"?>'
             b'<ListBucketResult><Name>b</Name><Prefix></Prefix>'
             b'<KeyCount>1</KeyCount><MaxKeys>1000</MaxKeys>'
             b'<IsTruncated>true</IsTruncated>'
             b'<NextContinuationToken>same</NextContinuationToken>'
             b'<Contents><Key>k</Key><Size>1</Size>'
             b'<LastModified>2026-01-01T00:00:00.000Z</LastModified>'
             b'</Contents></ListBucketResult>')


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def send(self, status, body, ctype="application/xml"):
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def do_GET(self):
        global COUNT
        with LOCK:
            COUNT += 1
            with open(PORTFILE + ".count", "w") as f:
                f.write(str(COUNT))
        if MODE == "badxml":
            self.send(200, b"this is <not xml at all")
        elif MODE == "bigbody":
            chunk = b"<a>" + b"x" * (1 << 20) + b"</a>"
            body_len = 70 * len(chunk)
            self.send_response(200)
            self.send_header("Content-Length", str(body_len))
            self.end_headers()
            try:
                for _ in range(70):
                    self.wfile.write(chunk)
            except (BrokenPipeError, ConnectionResetError):
                pass
        elif MODE == "loop":
            self.send(200, LOOP_PAGE)
        else:
            self.send(503, b"<Error><Code>SlowDown</Code>"
                           b"<Message>Please reduce your request rate.</Message>"
                           b"</Error>")

    do_HEAD = do_GET


def main():
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    with open(PORTFILE + ".tmp", "w") as f:
        f.write(str(srv.server_address[1]))
    import os
    os.rename(PORTFILE + ".tmp", PORTFILE)
    threading.Timer(120, srv.shutdown).start()
    srv.serve_forever()


if __name__ == "__main__":
    main()
