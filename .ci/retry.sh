# Sourced by the CI scripts. The npm registry is reached over the network, and
# one dropped download (EIDLETIMEOUT, ECONNRESET) should not fail a whole run:
# `retry CMD…` runs CMD up to three times, 15 s apart, and fails as CMD did.
export NPM_CONFIG_FETCH_RETRIES=5
export NPM_CONFIG_FETCH_RETRY_MINTIMEOUT=10000
export NPM_CONFIG_FETCH_RETRY_MAXTIMEOUT=60000

retry() {
  local n status
  for n in 1 2 3; do
    "$@" && return 0
    status=$?
    if [ "$n" -lt 3 ]; then
      echo "failed (exit $status), retrying in 15 s: $*" >&2
      sleep 15
    fi
  done
  return "$status"
}
