#!/usr/bin/env bash
# Starts a single-member etcd (Debian's etcd-server package) on 127.0.0.1:2379
# for the etcd worker-id provider tests, without systemd. Idempotent: installs
# the package when missing, does nothing when a server already answers.
#   SEQUOIA_ETCD_PORT  client port (default 2379)
#   SEQUOIA_ETCD_DIR   data and log (default $TMPDIR/sequoia-etcd)
set -euo pipefail
NAME=etcd
PORT="${SEQUOIA_ETCD_PORT:-2379}"
DIR="${SEQUOIA_ETCD_DIR:-${TMPDIR:-/tmp}/sequoia-etcd}"
. "$(dirname "$0")/service.sh"

answering() {
  # etcd's /health over plain HTTP; bash's /dev/tcp, so curl is not needed.
  local reply
  reply=$(timeout 2 bash -c "exec 3<>/dev/tcp/127.0.0.1/$PORT && printf 'GET /health HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n' >&3 && cat <&3" 2>/dev/null || true)
  [[ "$reply" == *'"health":"true"'* ]]
}

exit_if_answering
install_package etcd-server command -v etcd >/dev/null

# A free peer port: the member listens on one even when it has no peers, and
# 2380 may be taken by another etcd on the machine. Kept in the data dir, since
# a member restarted on its data answers only at the peer URL it was made with.
mkdir -p "$DIR"
if [ -s "$DIR/peer-port" ] && [ -d "$DIR/data" ]; then
  PEER_PORT=$(cat "$DIR/peer-port")
else
  rm -rf "$DIR/data"
  PEER_PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])' 2>/dev/null \
    || echo $((20000 + RANDOM % 20000)))
  echo "$PEER_PORT" >"$DIR/peer-port"
fi

echo "etcd: starting on 127.0.0.1:$PORT, peer port $PEER_PORT (data and log in $DIR)"
nohup etcd --name sequoia-ci --data-dir "$DIR/data" \
  --listen-client-urls "http://127.0.0.1:$PORT" --advertise-client-urls "http://127.0.0.1:$PORT" \
  --listen-peer-urls "http://127.0.0.1:$PEER_PORT" --initial-advertise-peer-urls "http://127.0.0.1:$PEER_PORT" \
  --initial-cluster "sequoia-ci=http://127.0.0.1:$PEER_PORT" --initial-cluster-state new >"$DIR/etcd.log" 2>&1 &
echo $! >"$DIR/etcd.pid"

wait_answering
