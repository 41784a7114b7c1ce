/**
 * Where the CLI's store commands (`tag …`, `fence`, `gen segment`, `migrate`)
 * connect when nothing names a store or a state dir. `serve` makes the
 * documented defaults (`sqlite:./data/sequoia.db`, `./data`) its home; a
 * one-shot command run from another directory would instead create an empty
 * `./data` there and report success on a store no server reads, or write
 * marks no server keeps (issue 40 item 6). So a command takes a default only
 * where it already exists (as after the Quick start's `npm start`), and else
 * refuses with exit status 2, naming the flag and the variable that set it.
 */
import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { InvalidArgumentError } from '../core/errors.js';
import { resolveConfigSources, type ServeConfig } from './config.js';
import { DEFAULT_STATE_DIR, DEFAULT_STORE_URL } from './defaults.js';

/** The file the default store URL names (`sqlite:./data/sequoia.db`). */
const DEFAULT_STORE_FILE = DEFAULT_STORE_URL.slice('sqlite:'.length);

/**
 * The configuration of a store command: `store` and, with `stateDir`, the
 * state dir, from flags, environment or config file as for `serve`; a default
 * only when it exists in the working directory.
 */
export function resolveCommandConfig(
  flags: { readonly store?: string; readonly stateDir?: string },
  o: { readonly stateDir: boolean },
): ServeConfig {
  const { config, defaulted } = resolveConfigSources(
    { store: flags.store, ...(o.stateDir ? { stateDir: flags.stateDir } : {}) },
    process.env,
    undefined,
  );
  if (defaulted.has('store') && !existsSync(DEFAULT_STORE_FILE)) {
    throw new InvalidArgumentError(
      `no store given: name it with --store URL or SEQUOIA_STORE (the default, ${DEFAULT_STORE_URL}, is used only where it exists, and ${resolve(DEFAULT_STORE_FILE)} does not)`,
    );
  }
  if (o.stateDir && defaulted.has('stateDir') && !existsSync(DEFAULT_STATE_DIR)) {
    throw new InvalidArgumentError(
      `no state dir given: name the server's with --state-dir DIR or SEQUOIA_STATE_DIR (the default, ${DEFAULT_STATE_DIR}, is used only where it exists, and ${resolve(DEFAULT_STATE_DIR)} does not)`,
    );
  }
  return config;
}
