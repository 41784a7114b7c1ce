// `node --import ./require-trace.mjs …`: prints every CommonJS file a process loads (what fastify and the drivers
// require), as the ESM hooks (hooks.mjs) print modules: `LOADED file://…` on fd 2. Node 20's module hooks do not see
// require(). A worker thread runs the preload too; its lines say which thread (`LOADED file://… thread 2`), so that
// `^LOADED (\S+)$` reads the main thread's loads alone.
import Module from 'node:module';
import { writeSync } from 'node:fs';
import { pathToFileURL } from 'node:url';
import { isMainThread, threadId } from 'node:worker_threads';

const where = isMainThread ? '' : ` thread ${threadId}`;

const seen = new Set();
const load = Module._load;
Module._load = function (request, parent, isMain) {
  if (!request.startsWith('node:') && !Module.isBuiltin(request)) {
    try {
      const file = Module._resolveFilename(request, parent, isMain);
      if (!seen.has(file)) {
        seen.add(file);
        writeSync(2, `LOADED ${pathToFileURL(file).href}${where}\n`);
      }
    } catch {
      // the real load reports it
    }
  }
  return load.call(this, request, parent, isMain);
};
