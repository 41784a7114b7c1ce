#!/usr/bin/env bash
# Observability checks for CI (called from .ci/run after `npm ci`, which builds dist/).
#
#   .ci/observability-tools.sh [install] [rules] [metrics]     (no argument: all three)
#
# install  Debian's chromium (for test/e2e/ui.test.ts) if /usr/bin/chromium is
#          missing, and promtool. promtool comes from Debian's `prometheus`
#          package, but installing that package would start a Prometheus
#          service (its postinst runs invoke-rc.d/deb-systemd-invoke), so it is
#          only downloaded and unpacked (`apt-get download` + `dpkg -x`) into
#          $SEQUOIA_TOOLS_DIR (default ~/.cache/sequoia-tools); nothing starts.
# rules    promtool check rules and test rules on ops/prometheus/ (the unit tests: every alert
#          silent on a recorded healthy server, firing on its trouble); promtool check config
#          deploy/prometheus/prometheus.yml as it is (compose's); check rules on the spec of
#          deploy/kubernetes/prometheusrule.yaml
# metrics  starts the built server (dist/) on a throw-away SQLite file, draws IDs
#          and provokes an error so every sequoia_* family has samples, fetches
#          /metrics and runs `promtool check metrics` on the sequoia_* families.
#          They must be clean. The rest (prom-client's default process metrics)
#          is linted too, for information: prom-client exports
#          nodejs_active_handles_total, nodejs_active_requests_total and
#          nodejs_active_resources_total as gauges, which promtool's naming lint
#          rejects ("non-counter metrics should not have _total suffix"); those
#          names are prom-client's, not ours, so they are the only findings
#          tolerated there.
set -euo pipefail
cd "$(dirname "$0")/.."

TOOLS="${SEQUOIA_TOOLS_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/sequoia-tools}"
log() { printf '\n== %s\n' "$*"; }

apt_ready=0
apt_update_once() {
  if [ "$apt_ready" = 0 ]; then
    apt-get update -qq
    apt_ready=1
  fi
}

ensure_chromium() {
  if [ -x /usr/bin/chromium ]; then
    echo "chromium: $(/usr/bin/chromium --version 2>/dev/null | tail -n1)"
    return
  fi
  log "installing Debian chromium"
  apt_update_once
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium
  /usr/bin/chromium --version 2>/dev/null | tail -n1
}

PROMTOOL=""
find_promtool() {
  if command -v promtool >/dev/null 2>&1; then
    PROMTOOL="$(command -v promtool)"
  elif [ -x "$TOOLS/prometheus/usr/bin/promtool" ]; then
    PROMTOOL="$TOOLS/prometheus/usr/bin/promtool"
  fi
}

ensure_promtool() {
  find_promtool
  if [ -z "$PROMTOOL" ]; then
    log "extracting promtool from Debian's prometheus package (not installed: its postinst would start a service)"
    apt_update_once
    mkdir -p "$TOOLS/download"
    rm -f "$TOOLS"/download/prometheus_*.deb
    # apt-get download writes to the current directory; as root it warns that _apt
    # cannot write there, which is harmless.
    (cd "$TOOLS/download" && apt-get download prometheus 2>&1 | grep -v '^W: Download is performed unsandboxed' || true)
    deb="$(ls "$TOOLS"/download/prometheus_*.deb 2>/dev/null | head -n1)"
    [ -n "$deb" ] || { echo "error: apt-get download prometheus fetched nothing" >&2; exit 1; }
    rm -rf "$TOOLS/prometheus"
    dpkg -x "$deb" "$TOOLS/prometheus"
    find_promtool
  fi
  [ -n "$PROMTOOL" ] || { echo "error: promtool not found after extraction" >&2; exit 1; }
  echo "promtool: $PROMTOOL ($("$PROMTOOL" --version 2>&1 | head -n1))"
}

check_rules() {
  ensure_promtool
  log "promtool check rules ops/prometheus/sequoia-alerts.yml"
  "$PROMTOOL" check rules ops/prometheus/sequoia-alerts.yml
  log "promtool test rules ops/prometheus/sequoia-alerts.test.yml"
  (cd ops/prometheus && "$PROMTOOL" test rules sequoia-alerts.test.yml)

  # deploy/: compose's Prometheus config as it is, in a copy: its rule file and its metrics
  # token are relative to it (rules/ links to the file above in the checkout and is mounted in
  # compose; ../secrets/metrics-token is deploy/secrets/, which the operator fills, so a
  # stand-in token is made here; docs/monitoring.md), and the rules of the Kubernetes
  # PrometheusRule (test/deploy checks they equal the file above).
  local dir
  dir="$(mktemp -d)"
  mkdir -p "$dir/prometheus/rules" "$dir/secrets"
  cp deploy/prometheus/prometheus.yml "$dir/prometheus/"
  cp ops/prometheus/sequoia-alerts.yml "$dir/prometheus/rules/"
  echo stand-in-metrics-token-0123 >"$dir/secrets/metrics-token"
  log "promtool check config deploy/prometheus/prometheus.yml (with a stand-in metrics token)"
  "$PROMTOOL" check config "$dir/prometheus/prometheus.yml"
  log "promtool check rules on the spec of deploy/kubernetes/prometheusrule.yaml"
  node -e "const fs=require('fs'),y=require('yaml');fs.writeFileSync(process.argv[1],y.stringify(y.parse(fs.readFileSync('deploy/kubernetes/prometheusrule.yaml','utf8')).spec))" "$dir/prometheusrule-spec.yml"
  "$PROMTOOL" check rules "$dir/prometheusrule-spec.yml"
  rm -rf "$dir"
}

check_metrics() {
  ensure_promtool
  log "promtool check metrics on GET /metrics of the built server"
  [ -f dist/cli/main.js ] || npm run build
  local dir pid url="" i
  dir="$(mktemp -d)"
  # One process (SEQUOIA_WORKERS=1): under node:cluster each worker has its own registry.
  SEQUOIA_WORKERS=1 node dist/cli/main.js serve --port 0 --store "sqlite:$dir/metrics.db" --state-dir "$dir" --log-level info >"$dir/server.log" 2>&1 &
  pid=$!
  # shellcheck disable=SC2064
  trap "kill $pid 2>/dev/null || true; rm -rf '$dir'" EXIT
  for i in $(seq 1 100); do
    url="$(grep -o '"url":"http://[^"]*"' "$dir/server.log" | head -n1 | cut -d'"' -f4 || true)"
    [ -n "$url" ] && break
    kill -0 "$pid" 2>/dev/null || { cat "$dir/server.log" >&2; echo "error: server exited" >&2; exit 1; }
    sleep 0.1
  done
  [ -n "$url" ] || { cat "$dir/server.log" >&2; echo "error: server did not start" >&2; exit 1; }
  curl -fsS -XPOST "$url/v1/tags" -H 'content-type: application/json' -d '{"tag":"promtool","step":10}' >/dev/null
  for i in 1 2 3; do curl -fsS "$url/v1/segment/promtool?count=4" >/dev/null; done
  curl -sS "$url/api/segment/get/no-such-tag" >/dev/null || true
  curl -fsS "$url/metrics" >"$dir/metrics.txt"

  local missing=0 name
  for name in sequoia_ids_issued_total sequoia_errors_total sequoia_segment_remaining sequoia_segment_next_ready \
    sequoia_segment_step sequoia_segment_cover_seconds sequoia_segment_load_seconds sequoia_segment_load_failures_total \
    sequoia_store_reachable sequoia_worker_lease_expiry_seconds sequoia_worker_lease_ttl_seconds; do
    grep -q "^# TYPE $name " "$dir/metrics.txt" || { echo "error: /metrics lacks $name" >&2; missing=1; }
  done
  [ "$missing" = 0 ] || exit 1

  # Our families, HELP/TYPE lines included: must pass with no finding.
  grep -E '^(# (HELP|TYPE) )?sequoia_' "$dir/metrics.txt" >"$dir/sequoia.txt"
  echo "checking $(grep -c '^sequoia_' "$dir/sequoia.txt") sequoia_* samples"
  "$PROMTOOL" check metrics <"$dir/sequoia.txt"
  echo "sequoia_* metrics: no problems"

  # Everything else: only prom-client's nodejs_active_*_total gauges may be flagged.
  local other
  other="$("$PROMTOOL" check metrics <"$dir/metrics.txt" 2>&1 || true)"
  if [ -n "$other" ]; then
    echo "promtool on the full exposition (for information):"
    echo "$other" | sed 's/^/  /'
    if echo "$other" | grep -vqE '^nodejs_active_(handles|requests|resources)_total non-counter metrics should not have "_total" suffix$'; then
      echo "error: promtool flagged more than prom-client's nodejs_active_*_total gauges" >&2
      exit 1
    fi
  fi
  kill "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
}

steps=("$@")
[ ${#steps[@]} -gt 0 ] || steps=(install rules metrics)
for step in "${steps[@]}"; do
  case "$step" in
    install) ensure_chromium; ensure_promtool ;;
    rules) check_rules ;;
    metrics) check_metrics ;;
    *) echo "usage: $0 [install] [rules] [metrics]" >&2; exit 2 ;;
  esac
done
