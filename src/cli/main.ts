#!/usr/bin/env node
/**
 * The `sequoia` command. `sequoia gen uuid` (and `uuid4`, `ulid`), without
 * options, is what scripts call once per ID: it is answered here, from the
 * core's generator, before commander and the command table (commands.ts)
 * load. `serve` starts its storage threads (app/off-loop-entry.ts) and loads
 * its own entry (serve-main.ts); anything else goes to the command table.
 */
import { systemClock } from '../core/clock.js';
import { systemRandom } from '../core/random.js';
import { UuidV4Generator, UuidV7Generator } from '../core/uuid/index.js';

function quickId(args: readonly string[]): string | undefined {
  if (args.length !== 2 || args[0] !== 'gen') return undefined;
  const kind = args[1];
  if (kind === 'uuid4') return new UuidV4Generator({ random: systemRandom }).next();
  if (kind !== 'uuid' && kind !== 'ulid') return undefined;
  const g = new UuidV7Generator({ clock: systemClock, random: systemRandom });
  return kind === 'ulid' ? g.nextUlid() : g.next();
}

const args = process.argv.slice(2);
let id: string | undefined;
try {
  id = quickId(args);
} catch {
  // the command table says it, with its exit status
}
if (id !== undefined) console.log(id);
else {
  if (args[0] === 'serve') {
    // The store's and the state dir's threads boot on the other core while the server's modules load.
    (await import('../app/off-loop-entry.js')).warmServeThreads(args, process.env);
    await import('./serve-main.js');
  } else await import('./commands.js');
}
