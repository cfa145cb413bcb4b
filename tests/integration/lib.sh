# SPDX-License-Identifier: MIT
# shellcheck shell=bash
#
# Library for the integration tests (tests/integration/t_*.sh); source it:
#
#   . "$(dirname "$0")/lib.sh"
#
# ctest runs each test with S3_STATE (the DIR given to scripts/s3-server
# start), SHARDFS_BIN, SHARDFS_SRC and SHARDFS_BUILD in the environment.
#
# Cleanup:   on_exit CMD [ARG...]   run at exit (pass or fail), last
#                                   registered first, in the main shell; a
#                                   single argument is evaluated as shell
#                                   code (on_exit 'kill $pid; wait $pid')
#            tmpdir_new             print a new temporary directory, removed
#                                   at exit (works inside $(...))
# Misc:      free_port              print a free TCP port on 127.0.0.1
# Results:   fail MSG | pass MSG | skip MSG (exit 77) | expect_eq GOT WANT WHAT
# S3:        s3_env                 export S3_ENDPOINT, AWS_* from $S3_STATE/env
#            s3_bucket_name [SUFFIX]  a bucket name unique to this test run
#            s3_mb BUCKET [ACL]     create a bucket (ACL e.g. public-read)
#            s3_rb_force BUCKET     empty and delete a bucket (missing: ok)
#            s3_put_tree DIR s3://BUCKET/PREFIX [ACL]
#                                   upload every file under DIR as
#                                   PREFIX/<path relative to DIR>, 16 at once
#            s3_put FILE|- s3://BUCKET/KEY [ACL]   (s3_put_file: the same)
#            s3_get s3://BUCKET/KEY [FILE]   (to stdout without FILE)
#            s3_ls s3://BUCKET[/PREFIX]      every key, one a line, in order
#            s3_rm s3://BUCKET/KEY...
#            s3_python ARG...       /usr/bin/python3 with the S3 env set
#                                   (boto3 and botocore are installed)
# The S3 helpers use Debian's boto3/botocore, a client no one here wrote.

set -euo pipefail

_LIB_MAIN_PID=$BASHPID
_LIB_STATE=$(mktemp -d "${TMPDIR:-/tmp}/shardfs-lib.XXXXXX")
: >"$_LIB_STATE/cleanup"
TEST_NAME=$(basename "${0%.sh}")

# ---------------------------------------------------------------- cleanup ---
# Commands are kept in a file so that registrations made in subshells
# (x=$(tmpdir_new)) are seen by the main shell's EXIT trap.
on_exit() {
  (($# > 0)) || return 0
  local line
  if (($# == 1)); then line=$1; else line=$(printf '%q ' "$@"); fi
  # One command per record, NUL-terminated (commands may hold newlines).
  printf '%s\0' "$line" >>"$_LIB_STATE/cleanup"
}

_lib_cleanup() {
  local rc=$? i
  [[ $BASHPID == "$_LIB_MAIN_PID" ]] || return "$rc"
  trap - EXIT INT TERM HUP
  set +e
  local -a cmds=()
  [[ -f "$_LIB_STATE/cleanup" ]] && mapfile -d '' -t cmds <"$_LIB_STATE/cleanup"
  for ((i = ${#cmds[@]} - 1; i >= 0; i--)); do
    eval "${cmds[i]}" || echo "cleanup: '${cmds[i]}' failed (exit $?)" >&2
  done
  rm -rf -- "$_LIB_STATE"
  exit "$rc"
}
trap _lib_cleanup EXIT
trap 'exit 129' HUP
trap 'exit 130' INT
trap 'exit 143' TERM

# _lib_rm_tree DIR: lazily unmount anything still mounted under DIR (a FUSE
# mount left behind must not be walked, or emptied, by rm), then remove it.
_lib_rm_tree() {
  local d=$1 m
  [[ -e "$d" ]] || return 0
  while read -r _ m _; do
    m=$(printf '%b' "$m") # /proc/mounts escapes spaces as \040
    [[ "$m" == "$d" || "$m" == "$d"/* ]] || continue
    fusermount3 -u -z "$m" 2>/dev/null || umount -l "$m" 2>/dev/null || true
  done < <(tac /proc/mounts)
  rm -rf --one-file-system -- "$d"
}

tmpdir_new() {
  local d
  d=$(mktemp -d "${TMPDIR:-/tmp}/shardfs-$TEST_NAME.XXXXXX")
  on_exit _lib_rm_tree "$d"
  echo "$d"
}

# ---------------------------------------------------------------- results ---
fail() { echo "FAIL: $TEST_NAME: $*" >&2; exit 1; }
pass() { echo "PASS: $TEST_NAME: $*"; }
skip() { echo "SKIP: $TEST_NAME: $*" >&2; exit 77; }

_lib_show() { # a value for a message: quoted, cut at 300 characters
  local v=$1
  ((${#v} > 300)) && v="${v:0:300}... (${#1} chars)"
  printf "'%s'" "$v"
}
expect_eq() {
  (($# == 3)) || fail "expect_eq needs GOT WANT WHAT (got $# arguments)"
  [[ "$1" == "$2" ]] || fail "$3: got $(_lib_show "$1"), want $(_lib_show "$2")"
}

free_port() {
  /usr/bin/python3 - <<'PY'
import random, socket, sys
for _ in range(500):
    p = random.randrange(20000, 32000)  # below the ephemeral range
    s = socket.socket()
    try:
        s.bind(("127.0.0.1", p))
    except OSError:
        continue
    finally:
        s.close()
    print(p)
    sys.exit(0)
sys.exit("free_port: no free port")
PY
}

# --------------------------------------------------------------------- S3 ---
s3_env() {
  [[ -n "${S3_STATE:-}" ]] ||
    fail "S3_STATE is not set (run under ctest, or: scripts/s3-server start DIR; S3_STATE=DIR)"
  [[ -f "$S3_STATE/env" ]] ||
    fail "no $S3_STATE/env: the test S3 server is not running (scripts/s3-server start $S3_STATE)"
  # shellcheck disable=SC1091
  . "$S3_STATE/env"
  [[ -n "${S3_ENDPOINT:-}" && -n "${AWS_ACCESS_KEY_ID:-}" ]] || fail "$S3_STATE/env is incomplete"
  # Keep clients away from the user's own AWS settings.
  unset AWS_PROFILE AWS_SESSION_TOKEN AWS_SECURITY_TOKEN AWS_ENDPOINT_URL_S3
  export AWS_CONFIG_FILE=/dev/null AWS_SHARED_CREDENTIALS_FILE=/dev/null
  # shardfs (like the AWS CLI v2) takes its endpoint from here.
  export AWS_ENDPOINT_URL=$S3_ENDPOINT
  export AWS_EC2_METADATA_DISABLED=true
}

s3_bucket_name() {
  local base=${TEST_NAME,,}
  base=${base//[^a-z0-9-]/-}
  base=${base:0:40}
  base=${base#-}
  local name="${base}-$$${1:+-$1}"
  name=${name,,}
  name=${name//[^a-z0-9-]/-}
  name=${name:0:63}
  echo "${name%-}"
}

s3_python() {
  [[ -n "${S3_ENDPOINT:-}" ]] || s3_env
  /usr/bin/python3 "$@"
}

s3_mb() { (($# >= 1)) || fail "usage: s3_mb BUCKET [ACL]"; _lib_s3tool mb "$@"; }
s3_rb_force() { (($# == 1)) || fail "usage: s3_rb_force BUCKET"; _lib_s3tool rb-force "$1"; }
s3_put_tree() {
  (($# >= 2)) || fail "usage: s3_put_tree DIR s3://BUCKET/PREFIX [ACL]"
  _lib_s3tool put-tree "$@"
}
s3_put() { (($# >= 2)) || fail "usage: s3_put FILE|- s3://BUCKET/KEY [ACL]"; _lib_s3tool put "$@"; }
s3_put_file() { s3_put "$@"; }
s3_get() { (($# >= 1)) || fail "usage: s3_get s3://BUCKET/KEY [FILE]"; _lib_s3tool get "$@"; }
s3_ls() { (($# == 1)) || fail "usage: s3_ls s3://BUCKET[/PREFIX]"; _lib_s3tool ls "$1"; }
s3_rm() { (($# >= 1)) || fail "usage: s3_rm s3://BUCKET/KEY..."; _lib_s3tool rm "$@"; }

_lib_s3tool() { s3_python -c "$_LIB_S3TOOL" "$@"; }

# The S3 helper, run as python3 -c "$_LIB_S3TOOL" COMMAND ARGS...
_LIB_S3TOOL=$(cat <<'PY'
import http.client, os, sys, threading, time, urllib.parse
from concurrent.futures import ThreadPoolExecutor

EP = os.environ["S3_ENDPOINT"].rstrip("/")
REGION = os.environ.get("AWS_REGION") or "us-east-1"
NS = "{http://s3.amazonaws.com/doc/2006-03-01/}"

def die(msg):
    sys.stderr.write("s3: %s\n" % msg)
    sys.exit(1)

def client():
    import boto3
    from botocore.config import Config
    return boto3.client(
        "s3", endpoint_url=EP, region_name=REGION,
        config=Config(s3={"addressing_style": "path"}, max_pool_connections=32,
                      retries={"max_attempts": 3, "mode": "standard"}))

def split(url, need_key=False):
    if not url.startswith("s3://"):
        die("not an s3:// URL: %r" % url)
    bucket, _, key = url[5:].partition("/")
    if not bucket or (need_key and not key):
        die("bad URL %r" % url)
    return bucket, key

def code(e):
    return getattr(e, "response", {}).get("Error", {}).get("Code", "")

class S3Error(Exception):
    pass

# boto3 takes ~0.5 s to make a client and ~3 ms of CPU per request, more than
# the server, so the data helpers sign with botocore's SigV4 signer and send
# over per-thread keep-alive http.client connections.
class Raw:
    def __init__(self):
        from botocore.auth import S3SigV4Auth
        from botocore.awsrequest import AWSRequest
        from botocore.credentials import Credentials
        self.AWSRequest = AWSRequest
        self.signer = S3SigV4Auth(
            Credentials(os.environ["AWS_ACCESS_KEY_ID"], os.environ["AWS_SECRET_ACCESS_KEY"]),
            "s3", REGION)
        self.url = urllib.parse.urlsplit(EP)
        self.local = threading.local()

    def conn(self):
        c = getattr(self.local, "c", None)
        if c is None:
            cls = (http.client.HTTPSConnection if self.url.scheme == "https"
                   else http.client.HTTPConnection)
            c = self.local.c = cls(self.url.hostname, self.url.port, timeout=120)
        return c

    def request(self, method, bucket, key="", query=None, body=b"", headers=None, sink=None):
        """Returns (status, headers, body); with sink, a 200 body goes to sink."""
        path = "%s/%s" % (self.url.path.rstrip("/"), urllib.parse.quote(bucket, safe=""))
        if key:
            path += "/" + urllib.parse.quote(key, safe="/~")
        if query:
            path += "?" + urllib.parse.urlencode(sorted(query.items()), quote_via=urllib.parse.quote, safe="~")
        for attempt in range(5):
            req = self.AWSRequest(method=method, url="%s://%s%s" % (self.url.scheme, self.url.netloc, path),
                                  data=body, headers=dict(headers or {}))
            self.signer.add_auth(req)
            try:
                c = self.conn()
                c.request(method, path, body=body, headers=dict(req.headers.items()))
                r = c.getresponse()
                if sink is not None and r.status == 200:
                    for chunk in iter(lambda: r.read(1 << 20), b""):
                        sink.write(chunk)
                    data = b""
                else:
                    data = r.read()
            except (OSError, http.client.HTTPException) as e:
                self.local.c = None
                if attempt == 4 or sink is not None:
                    raise S3Error("%s %s: %s" % (method, path, e))
                time.sleep(0.1 * (attempt + 1))
                continue
            if r.status >= 500 and attempt < 4 and sink is None:
                time.sleep(0.1 * (attempt + 1))
                continue
            return r.status, r, data

    def check(self, method, bucket, key="", ok=(200,), **kw):
        st, r, data = self.request(method, bucket, key, **kw)
        if st not in ok:
            raise S3Error("%s s3://%s/%s: HTTP %d %s" % (method, bucket, key, st,
                                                         data[:400].decode("utf-8", "replace")))
        return data

    def keys(self, bucket, prefix=""):
        import xml.etree.ElementTree as ET
        q = {"list-type": "2", "prefix": prefix}
        while True:
            root = ET.fromstring(self.check("GET", bucket, query=q))
            for c in root.iter(NS + "Contents"):
                yield c.find(NS + "Key").text or ""
            if root.findtext(NS + "IsTruncated") != "true":
                return
            q["continuation-token"] = root.findtext(NS + "NextContinuationToken")

def cmd_put_tree(src, url, acl=None):
    bucket, prefix = split(url)
    if prefix and not prefix.endswith("/"):
        prefix += "/"
    if not os.path.isdir(src):
        die("not a directory: %r" % src)
    files = []
    for root, dirs, names in os.walk(src):
        dirs.sort()
        for n in sorted(names):
            p = os.path.join(root, n)
            files.append((p, prefix + os.path.relpath(p, src)))
    raw = Raw()
    hdr = {"x-amz-acl": acl} if acl else {}
    def one(f):
        with open(f[0], "rb") as fh:
            raw.check("PUT", bucket, f[1], body=fh.read(), headers=hdr)
    with ThreadPoolExecutor(16) as ex:
        for _ in ex.map(one, files):
            pass

def cmd_put(src, url, acl=None):
    bucket, key = split(url, True)
    if src == "-":
        data = sys.stdin.buffer.read()
    else:
        with open(src, "rb") as fh:
            data = fh.read()
    Raw().check("PUT", bucket, key, body=data, headers={"x-amz-acl": acl} if acl else {})

def cmd_get(url, dst="-"):
    bucket, key = split(url, True)
    out = sys.stdout.buffer if dst == "-" else open(dst, "wb")
    Raw().check("GET", bucket, key, sink=out)
    out.flush()

def cmd_ls(url):
    bucket, prefix = split(url)
    sys.stdout.writelines(k + "\n" for k in Raw().keys(bucket, prefix))

def cmd_rm(*urls):
    raw = Raw()
    for u in urls:
        bucket, key = split(u, True)
        raw.check("DELETE", bucket, key, ok=(204, 200))

def cmd_mb(bucket, acl=None):
    kw = {"ACL": acl} if acl else {}
    client().create_bucket(Bucket=bucket, **kw)

def cmd_rb_force(bucket):
    c = client()
    try:
        for page in c.get_paginator("list_object_versions").paginate(Bucket=bucket):
            objs = [{"Key": o["Key"], "VersionId": o["VersionId"]}
                    for o in page.get("Versions", []) + page.get("DeleteMarkers", [])]
            for i in range(0, len(objs), 1000):
                c.delete_objects(Bucket=bucket, Delete={"Objects": objs[i:i + 1000], "Quiet": True})
        for page in c.get_paginator("list_objects_v2").paginate(Bucket=bucket):
            objs = [{"Key": o["Key"]} for o in page.get("Contents", [])]
            if objs:
                c.delete_objects(Bucket=bucket, Delete={"Objects": objs, "Quiet": True})
        for page in c.get_paginator("list_multipart_uploads").paginate(Bucket=bucket):
            for u in page.get("Uploads", []):
                c.abort_multipart_upload(Bucket=bucket, Key=u["Key"], UploadId=u["UploadId"])
        c.delete_bucket(Bucket=bucket)
    except Exception as e:
        if code(e) == "NoSuchBucket":
            return
        raise

CMDS = {"put-tree": cmd_put_tree, "mb": cmd_mb, "rb-force": cmd_rb_force, "put": cmd_put,
        "get": cmd_get, "ls": cmd_ls, "rm": cmd_rm}
if len(sys.argv) < 2 or sys.argv[1] not in CMDS:
    die("usage: s3tool %s ARGS..." % "|".join(CMDS))
import inspect
try:
    inspect.signature(CMDS[sys.argv[1]]).bind(*sys.argv[2:])
except TypeError as e:
    die("%s: bad arguments: %s" % (sys.argv[1], e))
try:
    CMDS[sys.argv[1]](*sys.argv[2:])
except BrokenPipeError:
    sys.exit(1)
except Exception as e:
    die("%s %s: %s" % (sys.argv[1], " ".join(sys.argv[2:])[:200], e))
PY
)
