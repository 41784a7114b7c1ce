// `node --import ./require-trace.mjs …`: prints every CommonJS file a process loads (what fastify and the drivers
// require), as the ESM hooks (hooks.mjs) print modules: `LOADED file://…` on fd 2. Node 20's module hooks do not see
// require().
import Module from 'node:module';
import { writeSync } from 'node:fs';
import { pathToFileURL } from 'node:url';

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
  return load.call(this, request, parent, isMain);
};
