#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""s3proxy: a counting, fault-injecting HTTP/1.1 proxy for S3 tests.

It listens on 127.0.0.1 and forwards every request, byte for byte (Host
header and SigV4 signature untouched), to one upstream S3 endpoint over a
keep-alive connection of its own per client connection. It counts requests
by kind and can break answers on purpose:

  503          answer 503 SlowDown (the request is not forwarded)
  500          answer 500 InternalError (not forwarded)
  reset-before reset the connection (RST) instead of answering
  reset-mid    forward; send the headers and half of the body, then RST
  short        forward; send the headers and half of the body, then close
               (FIN): fewer bytes than Content-Length
  stall        send nothing for --stall-seconds, then close
  stall-mid    forward; send the headers and half of the body, then
               nothing for --stall-seconds, then close
  bad-range    forward; a 206 answer gets a wrong Content-Range (shifted,
               shortened, inconsistent with its total, unparsable or
               missing) with the body unchanged
  range-200    forward; a 206 answer becomes "200 OK" without
               Content-Range, body unchanged
  outage       (not per request) refuse connections for a while: the
               listener closes and every open connection is reset

Usage:
  s3proxy.py --upstream http://127.0.0.1:7480 [--listen 127.0.0.1:0]
             [--port-file F] [--counts F] [--fault KIND:SHARE]...
             [--only KINDS] [--seed N] [--stall-seconds S]
             [--outage SECS:START]... [--control F] [--count-only]
             [--per-key] [--log F] [--max-lifetime S]

--fault 503:0.1 --fault reset-mid:0.02 answers about 10 % of the requests
with 503 and resets about 2 % mid-body (shares are disjoint, drawn from one
seeded generator). --only get,list limits faults to those request kinds
(get, list, head, put, other; default: all). --outage 5:10 refuses
connections for 5 s starting 10 s after start.

--control F: a file polled every 50 ms. Write it atomically (write F.tmp,
then rename it to F); the proxy runs its lines, then renames it to F.done:
  outage SECS        start an outage of SECS seconds now
  faults SPEC...     replace the faults ("faults 503:0.3 short:0.1";
                     "faults" alone: none)
  only KINDS         replace --only
  dump               write the counts file now
  reset              zero every counter

Counts: JSON written to --counts on SIGUSR1, on "dump", and at exit
(SIGTERM, SIGINT, --max-lifetime): requests by kind (GET, LIST, HEAD, PUT,
other), statuses sent to the client, faults injected by kind, "repeats"
(requests identical to an earlier one in method, target and Range: the
client's retries), connections, outages; with --per-key, GETs and HEADs per
request path.

--count-only: no faults and no parsing of answers (answers are copied
as raw bytes); only request heads are parsed, to count. Overhead is a copy
per direction, for benchmarks of request counts.

Standard library only (asyncio); any python3 >= 3.7.
"""

import argparse
import asyncio
import json
import os
import random
import signal
import socket
import struct
import sys
import time
import urllib.parse

FAULTS = ("503", "500", "reset-before", "reset-mid", "short", "stall",
          "stall-mid", "bad-range", "range-200")
KINDS = ("GET", "LIST", "HEAD", "PUT", "other")
HEAD_LIMIT = 1 << 20
CHUNK = 1 << 16
LIST_PARAMS = ("list-type", "prefix", "delimiter", "max-keys", "marker",
               "encoding-type", "continuation-token", "start-after")


class BadMessage(Exception):
    pass


# ----------------------------------------------------------------- HTTP ---

def parse_head(raw):
    """(first line, [(name, value)], {lower name: value}) of a head."""
    text = raw.decode("latin-1")
    lines = text.split("\r\n")
    first = lines[0]
    hdrs = []
    for line in lines[1:]:
        if not line:
            continue
        name, sep, value = line.partition(":")
        if not sep:
            raise BadMessage("bad header line %r" % line[:80])
        hdrs.append((name.strip(), value.strip()))
    return first, hdrs, {n.lower(): v for n, v in hdrs}


async def read_head(reader):
    """A message head (bytes, CRLF CRLF included), or None at a clean EOF."""
    while True:
        try:
            raw = await reader.readuntil(b"\r\n\r\n")
        except asyncio.IncompleteReadError as e:
            if not e.partial.strip():
                return None
            raise BadMessage("connection closed inside a head")
        except asyncio.LimitOverrunError:
            raise BadMessage("head too large")
        # Tolerate stray CRLFs between messages (RFC 9112 2.2).
        raw = raw.lstrip(b"\r\n")
        if raw:
            return raw


async def copy_exactly(reader, n, out):
    """Reads N bytes; appends them to the list OUT (or writes them to a
    writer OUT)."""
    while n > 0:
        data = await reader.read(min(n, CHUNK))
        if not data:
            raise BadMessage("connection closed inside a body")
        n -= len(data)
        if isinstance(out, list):
            out.append(data)
        else:
            out.write(data)
            await out.drain()


async def copy_chunked(reader, out):
    """Copies a chunked body, framing included, to OUT (list or writer)."""
    async def put(data):
        if isinstance(out, list):
            out.append(data)
        else:
            out.write(data)
            await out.drain()
    while True:
        line = await reader.readuntil(b"\r\n")
        await put(line)
        try:
            size = int(line.split(b";")[0].strip(), 16)
        except ValueError:
            raise BadMessage("bad chunk size line %r" % line[:40])
        if size == 0:
            while True:  # trailers, then an empty line
                t = await reader.readuntil(b"\r\n")
                await put(t)
                if t == b"\r\n":
                    return
        await copy_exactly(reader, size + 2, out)


def body_framing(hmap, is_request, method=None, status=None):
    """('none'|'length'|'chunked'|'close', length)."""
    if not is_request:
        if method == "HEAD" or status in (204, 304) or 100 <= status < 200:
            return "none", 0
    if "chunked" in hmap.get("transfer-encoding", "").lower():
        return "chunked", 0
    if "content-length" in hmap:
        try:
            n = int(hmap["content-length"])
        except ValueError:
            raise BadMessage("bad Content-Length")
        return ("length", n) if n > 0 else ("none", 0)
    return ("none", 0) if is_request else ("close", 0)


def classify(method, target, addressing):
    """GET, LIST, HEAD, PUT or other; and the object path (or None)."""
    path, _, query = target.partition("?")
    params = [p.split("=", 1)[0] for p in query.split("&") if p]
    if method == "GET":
        if "list-type" in params:
            return "LIST", None
        segs = path.lstrip("/").split("/", 1)
        has_key = len(segs) == 2 and segs[1] != "" if addressing == "path" \
            else path.lstrip("/") != ""
        if not has_key:
            if not params or all(p in LIST_PARAMS for p in params):
                return "LIST", None
            return "other", None
        if any(p in ("acl", "tagging", "uploads", "uploadId", "retention",
                     "legal-hold", "torrent", "attributes") for p in params):
            return "other", None
        return "GET", path
    if method == "HEAD":
        return "HEAD", path
    if method == "PUT":
        return "PUT", path
    return "other", None


def error_response(status, code, message, method):
    reason = {500: "Internal Server Error", 502: "Bad Gateway",
              503: "Slow Down"}.get(status, "Error")
    body = ("<?xml version=\"1.0\" encoding=\"UTF-8\"?><Error><Code>%s</Code>"
            "<Message>%s</Message><RequestId>s3proxy</RequestId></Error>"
            % (code, message)).encode()
    head = ("HTTP/1.1 %d %s\r\nContent-Type: application/xml\r\n"
            "Content-Length: %d\r\nx-amz-request-id: s3proxy\r\n\r\n"
            % (status, reason, len(body))).encode()
    return head + (b"" if method == "HEAD" else body)


def set_rst(writer):
    """Makes the next close of WRITER's socket send a RST."""
    sock = writer.get_extra_info("socket")
    if sock is not None:
        try:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER,
                            struct.pack("ii", 1, 0))
        except OSError:
            pass


def abort(writer):
    if writer is None:
        return
    set_rst(writer)
    writer.transport.abort()


async def flush(writer):
    """Waits until the transport's buffer is handed to the kernel."""
    writer.transport.set_write_buffer_limits(0)
    await writer.drain()


# ---------------------------------------------------------------- proxy ---

class Counts:
    def __init__(self):
        self.reset()

    def reset(self):
        self.requests = {k: 0 for k in KINDS}
        self.statuses = {}
        self.faults = {}
        self.seen = set()
        self.repeats = 0
        self.connections = 0
        self.refused_resets = 0
        self.outages = 0
        self.bytes_to_client = 0
        self.per_key = {"GET": {}, "HEAD": {}}

    def as_json(self, per_key):
        d = {"requests": dict(self.requests),
             "total": sum(self.requests.values()),
             "statuses": dict(sorted(self.statuses.items())),
             "faults": dict(sorted(self.faults.items())),
             "faults_total": sum(self.faults.values()),
             "repeats": self.repeats,
             "connections": self.connections,
             "connections_reset_by_outages": self.refused_resets,
             "outages": self.outages,
             "bytes_to_client": self.bytes_to_client}
        if per_key:
            d["per_key"] = self.per_key
        return d


class Proxy:
    def __init__(self, args):
        self.args = args
        u = urllib.parse.urlsplit(args.upstream if "//" in args.upstream
                                  else "http://" + args.upstream)
        if u.scheme != "http":
            sys.exit("s3proxy: only http:// upstreams")
        self.up_host, self.up_port = u.hostname, u.port or 80
        host, _, port = args.listen.rpartition(":")
        self.host, self.port = host or "127.0.0.1", int(port)
        self.rng = random.Random(args.seed)
        self.faults = parse_faults(args.fault)
        self.only = parse_only(args.only)
        self.counts = Counts()
        self.conns = set()
        self.server = None
        self.outage_until = 0.0
        self.stopping = None
        self.logf = open(args.log, "a", buffering=1) if args.log else None

    def log(self, msg):
        if self.logf:
            self.logf.write("%.3f %s\n" % (time.monotonic(), msg))

    # -- faults --
    def pick_fault(self, kind):
        if not self.faults or kind.lower() not in self.only:
            return None
        u = self.rng.random()
        for name, share in self.faults:
            if u < share:
                return name
            u -= share
        return None

    def count_fault(self, name):
        self.counts.faults[name] = self.counts.faults.get(name, 0) + 1

    def count_status(self, status):
        k = str(status)
        self.counts.statuses[k] = self.counts.statuses.get(k, 0) + 1

    def count_request(self, method, target, hmap):
        kind, path = classify(method, target, self.args.addressing)
        c = self.counts
        c.requests[kind] += 1
        ident = (method, target, hmap.get("range", ""))
        if ident in c.seen:
            c.repeats += 1
        else:
            c.seen.add(ident)
        if self.args.per_key and kind in ("GET", "HEAD"):
            c.per_key[kind][path] = c.per_key[kind].get(path, 0) + 1
        return kind

    # -- counts file --
    def dump(self):
        if not self.args.counts:
            return
        tmp = self.args.counts + ".tmp"
        with open(tmp, "w") as f:
            json.dump(self.counts.as_json(self.args.per_key), f, indent=1,
                      sort_keys=True)
            f.write("\n")
        os.replace(tmp, self.args.counts)

    # -- listening and outages --
    async def listen(self):
        handler = self.handle_raw if self.args.count_only else self.handle
        self.server = await asyncio.start_server(
            handler, self.host, self.port, limit=HEAD_LIMIT,
            reuse_address=True, backlog=512)
        self.port = self.server.sockets[0].getsockname()[1]

    async def outage(self, secs):
        self.counts.outages += 1
        self.log("outage %.1f s" % secs)
        self.outage_until = time.monotonic() + secs
        if self.server is not None:
            self.server.close()
            self.server = None
        for c in list(self.conns):
            self.counts.refused_resets += 1
            c.kill()
        while time.monotonic() < self.outage_until:
            await asyncio.sleep(min(0.05, self.outage_until - time.monotonic()))
        for _ in range(100):
            try:
                await self.listen()
                break
            except OSError:
                await asyncio.sleep(0.05)
        self.log("outage over")

    async def scheduled_outage(self, secs, start):
        await asyncio.sleep(start)
        await self.outage(secs)

    async def poll_control(self):
        path = self.args.control
        while True:
            await asyncio.sleep(0.05)
            try:
                with open(path) as f:
                    lines = f.read().splitlines()
            except FileNotFoundError:
                continue
            for line in lines:
                words = line.split()
                if not words:
                    continue
                if words[0] == "outage":
                    asyncio.ensure_future(self.outage(float(words[1])))
                elif words[0] == "faults":
                    self.faults = parse_faults(words[1:])
                elif words[0] == "only":
                    self.only = parse_only(words[1] if len(words) > 1 else "")
                elif words[0] == "dump":
                    self.dump()
                elif words[0] == "reset":
                    self.counts.reset()
                else:
                    self.log("unknown control command %r" % line)
            self.log("control: %s" % "; ".join(lines))
            os.replace(path, path + ".done")

    # -- connections --
    async def handle(self, reader, writer):
        c = Conn(self, reader, writer)
        self.conns.add(c)
        self.counts.connections += 1
        try:
            await c.run()
        except (BadMessage, OSError, asyncio.IncompleteReadError,
                asyncio.LimitOverrunError) as e:
            self.log("connection ended: %r" % (e,))
        finally:
            self.conns.discard(c)
            c.close()

    async def handle_raw(self, reader, writer):
        c = RawConn(self, reader, writer)
        self.conns.add(c)
        self.counts.connections += 1
        try:
            await c.run()
        finally:
            self.conns.discard(c)
            c.kill()


class Conn:
    """One client connection, served one request at a time."""

    def __init__(self, proxy, reader, writer):
        self.p = proxy
        self.r, self.w = reader, writer
        self.up_r = self.up_w = None
        self.dead = False

    def kill(self):
        self.dead = True
        abort(self.w)
        abort(self.up_w)

    def close(self):
        for w in (self.w, self.up_w):
            if w is not None and not w.is_closing():
                w.close()

    def drop_upstream(self):
        if self.up_w is not None:
            self.up_w.transport.abort()
        self.up_r = self.up_w = None

    async def send(self, data):
        self.w.write(data)
        self.p.counts.bytes_to_client += len(data)
        await self.w.drain()

    async def run(self):
        while not self.dead:
            head = await read_head(self.r)
            if head is None:
                return
            first, _, hmap = parse_head(head)
            parts = first.split(" ")
            if len(parts) != 3:
                raise BadMessage("bad request line %r" % first[:80])
            method, target = parts[0], parts[1]
            body = []
            how, n = body_framing(hmap, True)
            if hmap.get("expect", "").lower() == "100-continue":
                # Not used by the clients we test; keep them going.
                await self.send(b"HTTP/1.1 100 Continue\r\n\r\n")
            if how == "length":
                await copy_exactly(self.r, n, body)
            elif how == "chunked":
                await copy_chunked(self.r, body)
            kind = self.p.count_request(method, target, hmap)
            fault = self.p.pick_fault(kind)
            keep = await self.serve(method, target, head + b"".join(body),
                                    fault)
            if not keep:
                return

    async def serve(self, method, target, request, fault):
        """Answers one request; False when the connection must end."""
        p = self.p
        if fault in ("503", "500"):
            p.count_fault(fault)
            p.count_status(int(fault))
            p.log("%s %s -> fault %s" % (method, target, fault))
            if fault == "503":
                await self.send(error_response(
                    503, "SlowDown", "Please reduce your request rate.",
                    method))
            else:
                await self.send(error_response(
                    500, "InternalError", "We encountered an internal "
                    "error. Please try again.", method))
            return True
        if fault == "reset-before":
            p.count_fault(fault)
            p.log("%s %s -> fault %s" % (method, target, fault))
            abort(self.w)
            return False
        if fault == "stall":
            p.count_fault(fault)
            p.log("%s %s -> fault %s" % (method, target, fault))
            await self.stall()
            return False
        head = await self.forward(request)
        if head is None:
            await self.send(error_response(502, "BadGateway",
                                           "upstream unreachable", method))
            p.count_status(502)
            return False
        first, hdrs, hmap = parse_head(head)
        try:
            status = int(first.split(" ")[1])
        except (IndexError, ValueError):
            raise BadMessage("bad status line %r" % first[:80])
        how, n = body_framing(hmap, False, method, status)
        if fault in ("bad-range", "range-200") and status == 206:
            head = rewrite_206(fault, first, hdrs, p.rng)
            p.count_fault(fault)
            p.log("%s %s -> fault %s: %s" % (method, target, fault,
                                            head.split(b"\r\n")[0]))
            status = 200 if fault == "range-200" else status
        elif fault in ("reset-mid", "short", "stall-mid") and how != "none":
            p.count_fault(fault)
            p.count_status(status)
            p.log("%s %s -> fault %s" % (method, target, fault))
            await self.cut_body(head, how, n, fault)
            return False
        p.count_status(status)
        await self.send(head)
        if how == "length":
            await copy_exactly(self.up_r, n, self)
        elif how == "chunked":
            await copy_chunked(self.up_r, self)
        elif how == "close":
            while True:
                data = await self.up_r.read(CHUNK)
                if not data:
                    break
                await self.send(data)
            self.drop_upstream()
            return False
        if hmap.get("connection", "").lower() == "close":
            self.drop_upstream()
            return False
        return True

    # A writer-like face for copy_exactly()/copy_chunked() into the client.
    def write(self, data):
        self.w.write(data)
        self.p.counts.bytes_to_client += len(data)

    async def drain(self):
        await self.w.drain()

    async def forward(self, request):
        """Sends REQUEST upstream; returns the answer's head (after any 1xx
        answers), or None when the upstream cannot be reached."""
        for attempt in (0, 1):
            fresh = self.up_w is None
            if fresh:
                try:
                    self.up_r, self.up_w = await asyncio.open_connection(
                        self.p.up_host, self.p.up_port, limit=HEAD_LIMIT)
                except OSError:
                    return None
            try:
                self.up_w.write(request)
                await self.up_w.drain()
                while True:
                    head = await read_head(self.up_r)
                    if head is None:
                        raise BadMessage("upstream closed")
                    code = head[9:12]
                    if not code.startswith(b"1"):
                        return head
                    await self.send(head)
            except (OSError, BadMessage, asyncio.IncompleteReadError):
                self.drop_upstream()
                if fresh or attempt == 1:
                    return None
        return None

    async def cut_body(self, head, how, n, fault):
        """Sends HEAD and about half of the body, then breaks the
        connection the way FAULT says."""
        if how == "length":
            await self.send(head)
            await copy_exactly(self.up_r, n // 2, self)
        else:
            raw = []
            if how == "chunked":
                await copy_chunked(self.up_r, raw)
            else:
                while True:
                    data = await self.up_r.read(CHUNK)
                    if not data:
                        break
                    raw.append(data)
            raw = b"".join(raw)
            await self.send(head + raw[:len(raw) // 2])
        self.drop_upstream()
        await flush(self.w)
        if fault == "reset-mid":
            abort(self.w)
        elif fault == "short":
            self.w.close()
        else:
            await self.stall()

    async def stall(self):
        """Sends nothing for --stall-seconds (or until the client gives
        up and closes), then resets the connection."""
        end = time.monotonic() + self.p.args.stall_seconds
        while not self.dead:
            left = end - time.monotonic()
            if left <= 0:
                break
            try:
                data = await asyncio.wait_for(self.r.read(CHUNK), left)
            except asyncio.TimeoutError:
                break
            if not data:
                break
        abort(self.w)


def rewrite_206(fault, first, hdrs, rng):
    """The head of a 206 answer, broken as FAULT says."""
    cr = next((v for n, v in hdrs if n.lower() == "content-range"), "")
    rest = [(n, v) for n, v in hdrs if n.lower() != "content-range"]
    if fault == "range-200":
        first = first.split(" ")[0] + " 200 OK"
        new = None
    else:
        try:
            span, total = cr.split(" ", 1)[1].split("/")
            s, e = (int(x) for x in span.split("-"))
            total = int(total)
        except (IndexError, ValueError):
            s, e, total = 0, 0, 1
        choices = [
            "bytes %d-%d/%d" % (s + 1, e + 1, total),   # shifted
            "bytes %d-%d/%d" % (s, e - 1, total),       # one byte short
            "bytes %d-%d/%d" % (s, e, e),               # end beyond total
            "bytes %d-%d/%d" % (s + 7, e, total),       # wrong start
            "bytes */%d" % total,                       # unparsable here
            None,                                       # missing
        ]
        if s > 0:
            choices.append("bytes %d-%d/%d" % (0, e - s, total))
        new = rng.choice(choices)
    lines = [first] + ["%s: %s" % nv for nv in rest]
    if new is not None:
        lines.append("Content-Range: %s" % new)
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


class RawConn:
    """--count-only: answers are copied as raw bytes; request heads are
    parsed to count them."""

    def __init__(self, proxy, reader, writer):
        self.p = proxy
        self.r, self.w = reader, writer
        self.up_w = None

    def kill(self):
        abort(self.w)
        abort(self.up_w)

    async def run(self):
        try:
            up_r, self.up_w = await asyncio.open_connection(
                self.p.up_host, self.p.up_port, limit=HEAD_LIMIT)
        except OSError:
            return
        down = asyncio.ensure_future(self.pump(up_r, self.w))
        try:
            await self.requests()
        except (BadMessage, OSError, asyncio.IncompleteReadError,
                asyncio.LimitOverrunError):
            pass
        try:
            self.up_w.write_eof()
        except OSError:
            pass
        try:
            await down
        except (OSError, asyncio.CancelledError):
            pass

    async def requests(self):
        while True:
            head = await read_head(self.r)
            if head is None:
                return
            first, _, hmap = parse_head(head)
            parts = first.split(" ")
            if len(parts) == 3:
                self.p.count_request(parts[0], parts[1], hmap)
            self.up_w.write(head)
            how, n = body_framing(hmap, True)
            if how == "length":
                await copy_exactly(self.r, n, self.up_w)
            elif how == "chunked":
                await copy_chunked(self.r, self.up_w)
            await self.up_w.drain()

    async def pump(self, reader, writer):
        while True:
            data = await reader.read(1 << 18)
            if not data:
                break
            self.p.counts.bytes_to_client += len(data)
            writer.write(data)
            await writer.drain()
        writer.close()


def parse_faults(specs):
    out = []
    for spec in specs or []:
        for item in spec.split(","):
            if not item:
                continue
            name, _, share = item.partition(":")
            if name not in FAULTS:
                sys.exit("s3proxy: unknown fault %r (one of %s)"
                         % (name, ", ".join(FAULTS)))
            try:
                share = float(share) if share else 1.0
            except ValueError:
                sys.exit("s3proxy: bad share in %r" % item)
            if not 0 <= share <= 1:
                sys.exit("s3proxy: share out of [0, 1] in %r" % item)
            out.append((name, share))
    if sum(s for _, s in out) > 1.0 + 1e-9:
        sys.exit("s3proxy: fault shares add up to more than 1")
    return out


def parse_only(spec):
    kinds = [k.strip().lower() for k in (spec or "").split(",") if k.strip()]
    for k in kinds:
        if k not in [x.lower() for x in KINDS]:
            sys.exit("s3proxy: --only takes %s, not %r"
                     % (",".join(x.lower() for x in KINDS), k))
    return kinds or [x.lower() for x in KINDS]


async def main_async(args):
    p = Proxy(args)
    loop = asyncio.get_event_loop()
    p.stopping = loop.create_future()

    def stop():
        if not p.stopping.done():
            p.stopping.set_result(True)
    loop.add_signal_handler(signal.SIGTERM, stop)
    loop.add_signal_handler(signal.SIGINT, stop)
    loop.add_signal_handler(signal.SIGUSR1, p.dump)
    await p.listen()
    if args.port_file:
        with open(args.port_file + ".tmp", "w") as f:
            f.write("%d\n" % p.port)
        os.replace(args.port_file + ".tmp", args.port_file)
    p.dump()
    tasks = []
    for spec in args.outage or []:
        secs, _, start = spec.partition(":")
        tasks.append(asyncio.ensure_future(
            p.scheduled_outage(float(secs), float(start or 0))))
    if args.control:
        tasks.append(asyncio.ensure_future(p.poll_control()))
    if args.max_lifetime:
        loop.call_later(args.max_lifetime, stop)
    await p.stopping
    for t in tasks:
        t.cancel()
    if p.server is not None:
        p.server.close()
    for c in list(p.conns):
        c.kill()
    p.dump()


def main():
    ap = argparse.ArgumentParser(
        description=__doc__.split("\n\nUsage:")[0],
        epilog="Usage:" + __doc__.split("\n\nUsage:")[1],
        formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--upstream", required=True,
                    help="http://HOST:PORT of the S3 server")
    ap.add_argument("--listen", default="127.0.0.1:0",
                    help="HOST:PORT to listen on (port 0: any)")
    ap.add_argument("--port-file", help="write the port here once listening")
    ap.add_argument("--counts", help="JSON counts file")
    ap.add_argument("--fault", action="append", default=[],
                    help="KIND:SHARE, e.g. 503:0.1 (repeatable)")
    ap.add_argument("--only", default="",
                    help="request kinds faults apply to (get,list,head,put,"
                    "other; default all)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--stall-seconds", type=float, default=10.0)
    ap.add_argument("--outage", action="append",
                    help="SECS:START refuse connections for SECS seconds, "
                    "START seconds after start (repeatable)")
    ap.add_argument("--control", help="control file (see the docstring)")
    ap.add_argument("--count-only", action="store_true",
                    help="no faults; copy answers raw (low overhead)")
    ap.add_argument("--per-key", action="store_true",
                    help="count GETs and HEADs per request path")
    ap.add_argument("--addressing", choices=("path", "virtual"),
                    default="path", help="to tell object GETs from LISTs")
    ap.add_argument("--log", help="append one line per fault/event here")
    ap.add_argument("--max-lifetime", type=float, default=0,
                    help="exit after this many seconds (0: never)")
    args = ap.parse_args()
    if args.count_only and (args.fault or args.outage):
        sys.exit("s3proxy: --count-only takes no faults")
    parse_faults(args.fault)
    parse_only(args.only)
    asyncio.run(main_async(args))


if __name__ == "__main__":
    main()
