// Module hooks for the load-trace tests: prints every module URL resolved (not node: built-ins) to stderr.
export async function resolve(specifier, context, next) {
  const r = await next(specifier, context);
  if (!r.url.startsWith('node:')) process.stderr.write(`LOADED ${r.url}\n`);
  return r;
}
