/**
 * Where the off-loop worker threads' entry is, and the threads `serve` starts
 * early (adapters/kit/off-loop/warm.ts). Kept apart from off-loop.ts so the
 * bin can start them without loading the state dir or SQLite.
 */
import { startWarmThreads } from '../adapters/kit/off-loop/warm.js';

/**
 * The worker entry beside this module: dist/app/ when run from the compiled
 * tree, dist/pkg/ (a bundle entry of the same name) when bundled. Undefined
 * when running from TypeScript sources (tests of the source tree), where the
 * objects run in-thread.
 */
export function offLoopEntry(): URL | undefined {
  if (import.meta.url.endsWith('.ts')) return undefined;
  return new URL('./off-loop-worker.js', import.meta.url);
}

/** The value of `--name v` or `--name=v` in `args`, the last one winning, as commander reads it. */
function flag(args: readonly string[], name: string): string | undefined {
  let value: string | undefined;
  args.forEach((a, i) => {
    if (a === name) value = args[i + 1];
    else if (a.startsWith(`${name}=`)) value = a.slice(name.length + 1);
  });
  return value;
}

/**
 * Starts the threads a one-process `serve` is about to open, read off its
 * arguments before they are parsed: the state dir's, and the SQLite store's
 * unless another store is named. A guess, never a decision: the start claims
 * the threads it opens and discards the others (a store named in a config
 * file), and a guess of a cluster start (`--workers`) starts none.
 */
export function warmServeThreads(args: readonly string[], env: NodeJS.ProcessEnv): void {
  const entry = offLoopEntry();
  if (!entry || args.includes('--help') || args.includes('-h')) return;
  const workers = flag(args, '--workers') ?? env['SEQUOIA_WORKERS'];
  if (workers !== undefined && workers !== '1') return;
  const store = flag(args, '--store') ?? env['SEQUOIA_STORE'];
  startWarmThreads(entry, store === undefined || store.startsWith('sqlite:') ? 2 : 1);
}
