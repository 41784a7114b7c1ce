// Module hooks for the load-trace tests: prints every module URL resolved (not node: built-ins) to stderr.
// The hooks run on their own thread, whose process.stderr is forwarded to the main thread asynchronously:
// lines written just before a short command exits can be lost (seen on Node 24). A write to fd 2 is not.
import { writeSync } from 'node:fs';

export async function resolve(specifier, context, next) {
  const r = await next(specifier, context);
  if (!r.url.startsWith('node:')) writeSync(2, `LOADED ${r.url}\n`);
  return r;
}
