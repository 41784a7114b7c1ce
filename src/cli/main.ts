#!/usr/bin/env node
/**
 * The `sequoia` command. `sequoia gen uuid` (and `uuid4`, `ulid`), without
 * options, is what scripts call once per ID: it is answered here, from the
 * core's generator, before commander and the command table (commands.ts)
 * load. Anything else, options included, goes to the command table; `serve`
 * starts its storage threads first (app/off-loop-entry.ts).
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
  // The store's and the state dir's threads boot on the other core while the command table and the server load.
  if (args[0] === 'serve') (await import('../app/off-loop-entry.js')).warmServeThreads(args, process.env);
  await import('./commands.js');
}
