#!/usr/bin/env bash
# s3-server.sh — a real S3-compatible server on 127.0.0.1 for WombatKV's tests (docs/s3.md).
#
#   scripts/s3-server.sh start [radosgw|moto]   start (default: $WOMBATKV_S3_SERVER or radosgw),
#                                               wait until ready, create the test bucket, and
#                                               print `export WOMBATKV_TEST_S3_*=...` lines
#   scripts/s3-server.sh env [radosgw|moto]     print the export lines of a running server
#   scripts/s3-server.sh stop [radosgw|moto]    stop it (by the process ids it saved); all if none
#
# Use as:  eval "$(scripts/s3-server.sh start)"  ...  scripts/s3-server.sh stop
# `start` is idempotent: a server that is already up is reused. State (pids, config, logs, the
# Ceph cluster) lives under $WOMBATKV_S3_STATE (default /tmp/wombatkv-s3-<uid>): a second,
# independent server needs only another WOMBATKV_S3_STATE (ports are picked free). radosgw needs
# the Debian packages below; `start radosgw` installs them if missing (as root).
#
# radosgw also listens with TLS: a throw-away CA and a server certificate for 127.0.0.1 are made
# with openssl at start-up, and WOMBATKV_TEST_S3_TLS_ENDPOINT / WOMBATKV_TEST_S3_CA_FILE name the
# https endpoint and the CA that signs it. moto serves plain HTTP only (no TLS variables).
set -euo pipefail

state_root="${WOMBATKV_S3_STATE:-/tmp/wombatkv-s3-$(id -u)}"
bucket="${WOMBATKV_TEST_S3_BUCKET:-wombatkv-test}"
region="us-east-1"
ceph_packages=(ceph-mon ceph-osd radosgw ceph-common ceph-base python3-rados)

log() { echo "s3-server: $*" >&2; }
die() { log "$*"; exit 1; }

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'
}

# wait_http URL SECONDS [CURL ARGS...]: until the URL answers anything over HTTP(S).
wait_http() {
  local url=$1 secs=$2 i
  shift 2
  for ((i = 0; i < secs * 10; i++)); do
    curl -s -o /dev/null --max-time 1 "$@" "$url" && return 0
    sleep 0.1
  done
  return 1
}

alive() { [[ -f $1 ]] && kill -0 "$(cat "$1")" 2>/dev/null; }

print_env() {
  local dir=$1
  [[ -f $dir/env ]] || die "no server state in $dir (run: $0 start)"
  cat "$dir/env"
}

# make_bucket ENDPOINT ACCESS SECRET: creates the test bucket (signed, via boto3 from moto's deps).
make_bucket() {
  python3 - "$1" "$2" "$3" "$bucket" <<'PY'
import sys, boto3, botocore
endpoint, access, secret, bucket = sys.argv[1:5]
s3 = boto3.client("s3", endpoint_url=endpoint, aws_access_key_id=access,
                  aws_secret_access_key=secret, region_name="us-east-1",
                  config=botocore.config.Config(s3={"addressing_style": "path"}))
try:
    s3.create_bucket(Bucket=bucket)
except s3.exceptions.BucketAlreadyOwnedByYou:
    pass
PY
}

# write_env DIR SERVER ENDPOINT ACCESS SECRET [TLS_ENDPOINT CA_FILE]
write_env() {
  local dir=$1 server=$2 endpoint=$3 access=$4 secret=$5 tls_endpoint=${6:-} ca_file=${7:-}
  cat >"$dir/env" <<EOF
export WOMBATKV_TEST_S3_SERVER=$server
export WOMBATKV_TEST_S3_ENDPOINT=$endpoint
export WOMBATKV_TEST_S3_BUCKET=$bucket
export WOMBATKV_TEST_S3_REGION=$region
export WOMBATKV_TEST_S3_ACCESS_KEY=$access
export WOMBATKV_TEST_S3_SECRET_KEY=$secret
EOF
  if [[ -n $tls_endpoint ]]; then
    cat >>"$dir/env" <<EOF
export WOMBATKV_TEST_S3_TLS_ENDPOINT=$tls_endpoint
export WOMBATKV_TEST_S3_CA_FILE=$ca_file
EOF
  else
    # A server without TLS: clear what an earlier server may have exported in this shell.
    echo "unset WOMBATKV_TEST_S3_TLS_ENDPOINT WOMBATKV_TEST_S3_CA_FILE" >>"$dir/env"
  fi
}

# make_tls DIR: a throw-away CA (ca.pem) and a certificate for 127.0.0.1/localhost signed by it
# (server.pem, server.key), EC P-256 so that it takes milliseconds. The CA key is deleted: nothing
# else can ever be signed with it.
make_tls() {
  local d=$1/tls
  mkdir -p "$d"
  (
    cd "$d"
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 7 \
      -subj "/CN=wombatkv test CA" -keyout ca.key -out ca.pem
    openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
      -subj "/CN=127.0.0.1" -keyout server.key -out server.csr
    printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n' >ext.cnf
    openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 7 \
      -extfile ext.cnf -out server.pem
    rm -f ca.key server.csr ext.cnf ca.srl
    chmod 600 server.key
  ) >"$1/log/tls.log" 2>&1 || die "openssl could not make the test certificates (see $1/log/tls.log)"
}

# ---- moto: fast, gets conditional writes right, checks no signatures ----

start_moto() {
  local dir=$state_root/moto
  if alive "$dir/pid" && wait_http "$(grep ENDPOINT "$dir/env" | cut -d= -f2)" 2; then
    print_env "$dir"
    return
  fi
  command -v moto_server >/dev/null || die "moto_server not found (pip install 'moto[server]')"
  rm -rf "$dir" && mkdir -p "$dir"
  local port
  port=$(free_port)
  nohup moto_server -H 127.0.0.1 -p "$port" >"$dir/log" 2>&1 &
  echo $! >"$dir/pid"
  local endpoint=http://127.0.0.1:$port
  wait_http "$endpoint" 30 || die "moto did not start on port $port (see $dir/log)"
  make_bucket "$endpoint" testing testing-secret
  write_env "$dir" moto "$endpoint" testing testing-secret
  log "moto on $endpoint (pid $(cat "$dir/pid"))"
  print_env "$dir"
}

# ---- radosgw: Ceph's S3 gateway on a one-node loopback cluster (memstore OSD) ----

ensure_ceph() {
  local missing=() p
  for p in "${ceph_packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  ((${#missing[@]} == 0)) && return
  [[ $(id -u) == 0 ]] || die "radosgw needs: apt-get install --no-install-recommends ${missing[*]}"
  log "installing ${missing[*]}"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" \
    >"$state_root/apt.log" 2>&1 || {
    DEBIAN_FRONTEND=noninteractive apt-get update -qq >/dev/null
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" \
      >"$state_root/apt.log" 2>&1
  } || die "installing Ceph failed (see $state_root/apt.log)"
}

start_radosgw() {
  local dir=$state_root/radosgw
  if alive "$dir/run/rgw.pid" && wait_http "$(grep ENDPOINT "$dir/env" | cut -d= -f2)" 2; then
    print_env "$dir"
    return
  fi
  stop_radosgw 2>/dev/null || true
  mkdir -p "$state_root"
  ensure_ceph
  rm -rf "$dir" && mkdir -p "$dir"/{mon,osd0,rgw,run,log}
  local t0=$SECONDS mon_port rgw_port tls_port fsid
  mon_port=$(free_port)
  rgw_port=$(free_port)
  tls_port=$(free_port)
  command -v openssl >/dev/null || die "openssl not found (apt-get install openssl)"
  make_tls "$dir"
  fsid=$(python3 -c 'import uuid; print(uuid.uuid4())')
  local conf=$dir/ceph.conf
  cat >"$conf" <<EOF
[global]
fsid = $fsid
mon_host = v2:127.0.0.1:$mon_port
mon_initial_members = a
auth_cluster_required = none
auth_service_required = none
auth_client_required = none
ms_bind_ipv6 = false
public_addr = 127.0.0.1
osd_pool_default_size = 1
osd_pool_default_min_size = 1
osd_pool_default_pg_num = 8
osd_pool_default_pgp_num = 8
osd_crush_chooseleaf_type = 0
mon_allow_pool_size_one = true
mon_allow_pool_delete = true
mon_warn_on_pool_no_redundancy = false
osd_objectstore = memstore
memstore_device_bytes = 2147483648
run_dir = $dir/run
admin_socket = $dir/run/\$name.asok
log_file = $dir/log/\$name.log
pid_file = $dir/run/\$name.pid
[mon.a]
mon_data = $dir/mon
[osd.0]
osd_data = $dir/osd0
[client]
ms_mon_client_mode = crc
[client.rgw.a]
rgw_frontends = beast endpoint=127.0.0.1:$rgw_port ssl_endpoint=127.0.0.1:$tls_port ssl_certificate=$dir/tls/server.pem ssl_private_key=$dir/tls/server.key tcp_nodelay=1
rgw_data = $dir/rgw
rgw_dns_name = 127.0.0.1
pid_file = $dir/run/rgw.pid
EOF
  local c=(-c "$conf")
  monmaptool --create --addv a "[v2:127.0.0.1:$mon_port]" --fsid "$fsid" "$dir/monmap" >/dev/null
  ceph-authtool --create-keyring "$dir/keyring" --gen-key -n mon. --cap mon 'allow *' >/dev/null
  ceph-mon "${c[@]}" -i a --mkfs --monmap "$dir/monmap" --keyring "$dir/keyring" \
    >"$dir/log/mkfs.log" 2>&1 || die "ceph-mon --mkfs failed (see $dir/log)"
  ceph-mon "${c[@]}" -i a 2>>"$dir/log/daemons.log" || die "ceph-mon did not start (see $dir/log)"
  local osd_id
  osd_id=$(timeout 30 ceph "${c[@]}" osd create 2>/dev/null) || die "the monitor does not answer"
  [[ $osd_id == 0 ]] || die "unexpected OSD id $osd_id"
  ceph-osd "${c[@]}" -i 0 --mkfs >"$dir/log/osd-mkfs.log" 2>&1 || die "ceph-osd --mkfs failed"
  ceph-osd "${c[@]}" -i 0 2>>"$dir/log/daemons.log" || die "ceph-osd did not start (see $dir/log)"
  # radosgw creates its pools lazily, ~2 s each: create them first (and all at once).
  local pool
  for pool in .rgw.root default.rgw.log default.rgw.control default.rgw.meta \
    default.rgw.buckets.index default.rgw.buckets.data default.rgw.buckets.non-ec; do
    ceph "${c[@]}" osd pool create "$pool" 8 8 >/dev/null 2>&1 &
  done
  wait
  for pool in .rgw.root default.rgw.log default.rgw.control default.rgw.meta \
    default.rgw.buckets.index default.rgw.buckets.data default.rgw.buckets.non-ec; do
    ceph "${c[@]}" osd pool application enable "$pool" rgw >/dev/null 2>&1 &
  done
  wait
  radosgw "${c[@]}" -n client.rgw.a 2>>"$dir/log/daemons.log" || die "radosgw did not start (see $dir/log)"
  local endpoint=http://127.0.0.1:$rgw_port
  wait_http "$endpoint" 60 || die "radosgw does not answer on $endpoint (see $dir/log)"
  local tls_endpoint=https://127.0.0.1:$tls_port
  wait_http "$tls_endpoint" 10 --cacert "$dir/tls/ca.pem" ||
    die "radosgw does not answer on $tls_endpoint with the test CA (see $dir/log)"
  local access=wombatkvtestaccess secret=wombatkv-test-secret-0123456789
  timeout 60 radosgw-admin "${c[@]}" user create --uid=wombatkv --display-name=wombatkv \
    --access-key="$access" --secret-key="$secret" >/dev/null 2>"$dir/log/user.log" ||
    die "radosgw-admin user create failed (see $dir/log/user.log)"
  make_bucket "$endpoint" "$access" "$secret"
  write_env "$dir" radosgw "$endpoint" "$access" "$secret" "$tls_endpoint" "$dir/tls/ca.pem"
  log "radosgw on $endpoint and $tls_endpoint, ready in $((SECONDS - t0)) s (state in $dir)"
  print_env "$dir"
}

stop_moto() {
  local dir=$state_root/moto
  if alive "$dir/pid"; then
    kill "$(cat "$dir/pid")" 2>/dev/null || true
    log "moto stopped"
  fi
  rm -f "$dir/pid" "$dir/env"
}

stop_radosgw() {
  local dir=$state_root/radosgw f pid i
  for f in rgw.pid osd.0.pid mon.a.pid; do
    [[ -f $dir/run/$f ]] || continue
    pid=$(cat "$dir/run/$f")
    if kill -0 "$pid" 2>/dev/null; then
      kill "$pid" 2>/dev/null || true
      for ((i = 0; i < 50; i++)); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
      kill -0 "$pid" 2>/dev/null && kill -9 "$pid" 2>/dev/null || true
    fi
    rm -f "$dir/run/$f"
  done
  rm -f "$dir/env"
  [[ -d $dir ]] && log "radosgw stopped"
  return 0
}

cmd=${1:-}
server=${2:-${WOMBATKV_S3_SERVER:-radosgw}}
case $server in moto | radosgw) ;; *) die "unknown server '$server' (radosgw or moto)" ;; esac
mkdir -p "$state_root"
case $cmd in
  start) "start_$server" ;;
  env) print_env "$state_root/$server" ;;
  stop)
    if [[ $# -ge 2 ]]; then "stop_$server"; else stop_moto; stop_radosgw; fi
    ;;
  *) echo "usage: $0 start|env|stop [radosgw|moto]" >&2; exit 2 ;;
esac
