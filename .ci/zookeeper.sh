#!/usr/bin/env bash
# Starts a standalone ZooKeeper (Debian's package) on 127.0.0.1:2181 for the
# zookeeper worker-id provider tests, without systemd. Idempotent: installs
# the package when missing, does nothing when a server already answers.
#   SEQUOIA_ZK_PORT  client port (default 2181)
#   SEQUOIA_ZK_DIR   config, data and log (default /tmp/sequoia-zookeeper)
set -euo pipefail
NAME=zookeeper
PORT="${SEQUOIA_ZK_PORT:-2181}"
DIR="${SEQUOIA_ZK_DIR:-/tmp/sequoia-zookeeper}"
. "$(dirname "$0")/service.sh"

answering() {
  # "imok" from the four-letter-word port; bash's /dev/tcp, so nc is not needed.
  local reply
  reply=$(timeout 2 bash -c "exec 3<>/dev/tcp/127.0.0.1/$PORT && printf ruok >&3 && cat <&3" 2>/dev/null || true)
  [ "$reply" = imok ]
}

exit_if_answering
install_package zookeeper test -f /usr/share/java/zookeeper.jar
command -v java >/dev/null || { echo "zookeeper: java is missing" >&2; exit 1; }

mkdir -p "$DIR/data"
cat >"$DIR/zoo.cfg" <<EOF
tickTime=500
dataDir=$DIR/data
clientPort=$PORT
clientPortAddress=127.0.0.1
maxClientCnxns=200
4lw.commands.whitelist=ruok,srvr,stat
# The AdminServer would take port 8080, Sequoia's default.
admin.enableServer=false
minSessionTimeout=1000
EOF

echo "zookeeper: starting on 127.0.0.1:$PORT (data and log in $DIR)"
# zookeeper.jar's manifest names its dependencies; the conf dir is first for log4j.
nohup java -Xms64m -Xmx256m -cp "/etc/zookeeper/conf:/usr/share/java/zookeeper.jar" \
  org.apache.zookeeper.server.ZooKeeperServerMain "$DIR/zoo.cfg" >"$DIR/zookeeper.log" 2>&1 &
echo $! >"$DIR/zookeeper.pid"

wait_answering
