/**
 * `npm run torture [-- --short] [--only NAME[,NAME]] [--seed N] [--dist DIR] [--out DIR] [--keep]`
 *
 * Runs the long set (default) or the short set against the built package,
 * writes the report as Markdown and JSON, and exits 1 on any repeat or broken
 * promise (2 on bad arguments).
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { toJson, toMarkdown } from './report.js';
import { onTargets } from './harness/reaper.js';
import { runSet } from './runner.js';
import { SCENARIOS } from './scenarios/index.js';
import { Watchdog } from './watchdog.js';

/** How long the run may take to exit after its last scenario before the watchdog ends it. */
const EXIT_GRACE_MS = 60_000;

function main(): Promise<number> | number {
  let values;
  try {
    ({ values } = parseArgs({
      options: {
        short: { type: 'boolean', default: false },
        only: { type: 'string' },
        seed: { type: 'string' },
        dist: { type: 'string', default: 'dist' },
        out: { type: 'string', default: 'torture-out' },
        keep: { type: 'boolean', default: false },
        list: { type: 'boolean', default: false },
      },
    }));
  } catch (e) {
    console.error(`torture: ${e instanceof Error ? e.message : String(e)}`);
    return 2;
  }
  if (values.list) {
    for (const s of SCENARIOS) console.log(`${s.name}${s.short ? ' (short)' : ''}: ${s.about}`);
    return 0;
  }
  const seed = values.seed === undefined ? Math.floor(Math.random() * 2 ** 31) : Number(values.seed);
  if (!Number.isInteger(seed) || seed < 0) {
    console.error('torture: --seed must be a non-negative integer');
    return 2;
  }
  const names = values.only?.split(',').map((n) => n.trim());
  const unknown = names?.filter((n) => !SCENARIOS.some((s) => s.name === n)) ?? [];
  if (unknown.length > 0) {
    console.error(`torture: no scenario ${unknown.join(', ')} (see --list)`);
    return 2;
  }
  const set = names ? SCENARIOS.filter((s) => names.includes(s.name)) : SCENARIOS.filter((s) => !values.short || s.short);
  const setName = names ? `only ${names.join(',')}` : values.short ? 'short' : 'long';
  const out = resolve(values.out);
  return (async () => {
    console.log(`torture: ${setName} set, ${set.length} scenarios, seed ${seed}`);
    const watchdog = new Watchdog();
    onTargets((t) => watchdog.watch(t));
    const report = await runSet(set, setName, {
      dist: resolve(values.dist),
      seed,
      long: !values.short,
      workDir: join(out, 'work'),
      keep: values.keep,
      log: (l) => console.log(l),
      watchdog,
    });
    watchdog.arm(EXIT_GRACE_MS, `the run had not exited ${EXIT_GRACE_MS / 1000} s after its last scenario`);
    mkdirSync(out, { recursive: true });
    writeFileSync(join(out, 'report.md'), toMarkdown(report));
    writeFileSync(join(out, 'report.json'), toJson(report));
    console.log(
      `torture: ${report.ok ? 'PASS' : 'FAIL'}: ${report.idsChecked} IDs checked, ${report.repeats} repeats; report in ${join(out, 'report.md')}`,
    );
    return report.ok ? 0 : 1;
  })();
}

const code = await main();
// Exit now: whatever a scenario left behind (a timed-out scenario keeps running in
// the background) must not hold the finished run. The report is written already.
process.exit(code);
