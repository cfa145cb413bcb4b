#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# The test S3 server (scripts/s3-server) works with reference clients
# (boto3 and Debian's awscli): buckets, a byte-exact round trip, odd keys,
# a bulk upload with a listing past one page, anonymous reads of public-read
# objects, and it checks signatures: a wrong secret is rejected with
# SignatureDoesNotMatch and an unknown key id with InvalidAccessKeyId.
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
s3_env

AWS=(/usr/bin/aws --endpoint-url "$S3_ENDPOINT" --region "$AWS_REGION")

bucket=$(s3_bucket_name)
s3_mb "$bucket"
on_exit s3_rb_force "$bucket"
expect_eq "$(s3_ls "s3://$bucket")" "" "listing of a new bucket"

tmp=$(tmpdir_new)

# Byte-exact round trip, also for keys that need encoding.
head -c 300000 /dev/urandom >"$tmp/blob"
for key in "blob" "dir with space/a+b%c=d&e" "ünïcödé/日本語 ☃.bin"; do
  s3_put "$tmp/blob" "s3://$bucket/$key"
  s3_get "s3://$bucket/$key" "$tmp/back"
  cmp -s "$tmp/blob" "$tmp/back" || fail "round trip of '$key' changed the data"
done
long=$(printf 'k%.0s' {1..1019})/tail # 1024 bytes
s3_put - "s3://$bucket/$long" <<<"long"
expect_eq "$(s3_get "s3://$bucket/$long")" "long" "object with a 1024-byte key"
pass "round trips"

# Bulk upload of a tree; listing crosses a page boundary (1000 keys a page).
mkdir -p "$tmp/tree"
for d in $(seq 0 11); do
  mkdir "$tmp/tree/d$d"
  for f in $(seq 0 99); do echo "$d/$f" >"$tmp/tree/d$d/f$f"; done
done
t0=$(date +%s%N)
s3_put_tree "$tmp/tree" "s3://$bucket/tree"
ms=$((($(date +%s%N) - t0) / 1000000))
n=$(s3_ls "s3://$bucket/tree/" | wc -l)
expect_eq "$n" 1200 "number of keys after s3_put_tree"
expect_eq "$(s3_get "s3://$bucket/tree/d7/f42")" "7/42" "content of tree/d7/f42"
expect_eq "$(s3_ls "s3://$bucket/tree/" | LC_ALL=C sort -c && echo sorted)" sorted "listing order"
pass "s3_put_tree uploaded 1200 files in $ms ms"

# awscli agrees, and anonymous GETs work for public-read objects only.
out=$("${AWS[@]}" s3api list-objects-v2 --bucket "$bucket" --prefix tree/d1/ \
  --query 'length(Contents)' --output text)
expect_eq "$out" 100 "awscli listing of tree/d1/"
s3_put - "s3://$bucket/public" public-read <<<"for everyone"
expect_eq "$(curl -s "$S3_ENDPOINT/$bucket/public")" "for everyone" "anonymous GET of a public-read object"
code=$(curl -s -o /dev/null -w '%{http_code}' "$S3_ENDPOINT/$bucket/blob")
expect_eq "$code" 403 "HTTP status of an anonymous GET of a private object"
pass "awscli and anonymous access"

# Signatures are checked. (boto3 here: awscli 2.9 crashes on radosgw's
# error replies, whose <Message> is empty.)
s3_python - "$bucket" <<'PY' || fail "signature checks"
import os, sys, boto3, botocore
from botocore.config import Config
bucket = sys.argv[1]
def code(**creds):
    c = boto3.client("s3", endpoint_url=os.environ["S3_ENDPOINT"], region_name=os.environ["AWS_REGION"],
                     config=Config(s3={"addressing_style": "path"}, retries={"max_attempts": 1}),
                     **creds)
    try:
        c.get_object(Bucket=bucket, Key="blob")
        return "accepted"
    except botocore.exceptions.ClientError as e:
        return "%s %s" % (e.response["ResponseMetadata"]["HTTPStatusCode"], e.response["Error"]["Code"])
key, secret = os.environ["AWS_ACCESS_KEY_ID"], os.environ["AWS_SECRET_ACCESS_KEY"]
got = [code(aws_access_key_id=key, aws_secret_access_key=secret),
       code(aws_access_key_id=key, aws_secret_access_key="wrong" + secret[5:]),
       code(aws_access_key_id="NOSUCHKEY0000000", aws_secret_access_key=secret)]
want = ["accepted", "403 SignatureDoesNotMatch", "403 InvalidAccessKeyId"]
if got != want:
    sys.exit("FAIL: right secret, wrong secret, unknown key: got %s, want %s" % (got, want))
PY
pass "signatures are verified"
