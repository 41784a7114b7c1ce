# Sourced by .ci/etcd.sh and .ci/zookeeper.sh: what starting a test service
# without systemd takes, written once. The sourcing script sets NAME (for
# messages), PORT, DIR and defines `answering` (true when the service answers
# on 127.0.0.1:$PORT); its server's pid goes to $DIR/$NAME.pid, its log to
# $DIR/$NAME.log.

# Exits 0 when a server already answers (the scripts are idempotent).
exit_if_answering() {
  if answering; then
    echo "$NAME: already answering on 127.0.0.1:$PORT"
    exit 0
  fi
}

# Installs Debian's package $1 unless `$2…` (a test) says it is there.
install_package() {
  local package=$1
  shift
  "$@" && return 0
  echo "$NAME: installing Debian's $package package"
  export DEBIAN_FRONTEND=noninteractive
  apt-get install -y --no-install-recommends "$package" >/dev/null 2>&1 \
    || { apt-get update >/dev/null && apt-get install -y --no-install-recommends "$package" >/dev/null; }
}

# Waits up to 30 s for the server just started to answer; shows its log when it exits or never answers.
wait_answering() {
  local pid
  pid=$(cat "$DIR/$NAME.pid")
  for _ in $(seq 1 60); do
    if answering; then
      echo "$NAME: ready (pid $pid)"
      exit 0
    fi
    if ! kill -0 "$pid" 2>/dev/null; then
      echo "$NAME: the server exited; its log:" >&2
      tail -n 40 "$DIR/$NAME.log" >&2
      exit 1
    fi
    sleep 0.5
  done
  echo "$NAME: no answer on 127.0.0.1:$PORT after 30 s; its log:" >&2
  tail -n 40 "$DIR/$NAME.log" >&2
  exit 1
}
