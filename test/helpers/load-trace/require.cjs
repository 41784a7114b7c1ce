// `node -r ./require.cjs …`: prints every CommonJS file a process loads (what fastify and the drivers require), as the
// ESM hooks (hooks.mjs) print modules: `LOADED file://…` on fd 2. Node 20's module hooks do not see require().
const Module = require('node:module');
const { writeSync } = require('node:fs');
const { pathToFileURL } = require('node:url');

const seen = new Set();
const load = Module._load;
Module._load = function (request, parent, isMain) {
  if (!request.startsWith('node:') && !Module.isBuiltin(request)) {
    try {
      const file = Module._resolveFilename(request, parent, isMain);
      if (!seen.has(file)) {
        seen.add(file);
        writeSync(2, `LOADED ${pathToFileURL(file).href}\n`);
      }
    } catch {
      // the real load reports it
    }
  }
  return load.apply(this, arguments);
};
