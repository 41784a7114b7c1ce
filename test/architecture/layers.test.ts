/**
 * The layer rule of eslint.config.js (docs/architecture.md) must fail on a
 * wrong import and pass the right one. Each case lints a planted file, as if
 * it stood at that path, with the project's own configuration.
 */
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { ESLint } from 'eslint';
import { describe, expect, it } from 'vitest';

const ROOT = join(import.meta.dirname, '..', '..');
const eslint = new ESLint({ cwd: ROOT });

async function layerErrors(path: string, code: string): Promise<string[]> {
  const [result] = await eslint.lintText(code, { filePath: join(ROOT, path) });
  return (result?.messages ?? [])
    .filter((m) => m.ruleId === 'no-restricted-imports' || m.ruleId === 'no-restricted-syntax')
    .map((m) => m.message);
}

const WRONG: Array<[string, string, RegExp]> = [
  ['src/core/planted.ts', "import type { Logger } from '../ports/logger.js';\nexport type L = Logger;\n", /may not import ports/],
  ['src/core/uuid/planted.ts', "import { IdService } from '../../service/id-service.js';\nexport const s = IdService;\n", /may not import/],
  ['src/ports/planted.ts', 'export const DEFAULT = 1;\n', /types only/],
  ['src/ports/planted.ts', "import { MAX_ID } from '../core/id.js';\nexport type M = typeof MAX_ID;\n", /types only/],
  [
    'src/service/planted.ts',
    "import { MemorySegmentStore } from '../adapters/memory/memory-segment-store.js';\nexport const m = MemorySegmentStore;\n",
    /may not import adapters/,
  ],
  [
    'src/adapters/mysql/planted.ts',
    "import { tableName } from '../postgres/postgres-segment-store.js';\nexport const t = tableName;\n",
    /never import each other/,
  ],
  [
    'src/adapters/sqlite/planted.ts',
    "import { IdService } from '../../service/id-service.js';\nexport const s = IdService;\n",
    /may not import service/,
  ],
  [
    'src/adapters/kit/sql/planted.ts',
    "import { PostgresSegmentStore } from '../../postgres/postgres-segment-store.js';\nexport const p = PostgresSegmentStore;\n",
    /kit never imports an adapter/,
  ],
  [
    'src/adapters/kit/peer/planted.ts',
    "import { IdService } from '../../../service/id-service.js';\nexport const s = IdService;\n",
    /may not import service/,
  ],
  [
    'src/server/planted.ts',
    "import { createStore } from '../app/stores.js';\nexport const c = createStore;\n",
    /may not import adapters, app/,
  ],
  [
    'src/server/routes/planted.ts',
    "import { SqliteSegmentStore } from '../../adapters/sqlite/sqlite-segment-store.js';\nexport const s = SqliteSegmentStore;\n",
    /may not import adapters/,
  ],
  [
    'src/cli/planted.ts',
    "import { PostgresSegmentStore } from '../adapters/postgres/postgres-segment-store.js';\nexport const p = PostgresSegmentStore;\n",
    /may not import adapters/,
  ],
  [
    'src/client/planted.ts',
    "import type { SegmentStore } from '../ports/segment-store.js';\nexport type S = SegmentStore;\n",
    /may not import ports/,
  ],
  ['src/index.ts', "export { buildApp } from './server/build-app.js';\n", /may not import/],
];

const RIGHT: Array<[string, string]> = [
  ['src/core/planted.ts', "import { MAX_ID } from './id.js';\nexport const m = MAX_ID;\n"],
  ['src/ports/planted.ts', "import type { HighWaterMark } from '../core/segment/rollback-guard.js';\nexport type H = HighWaterMark;\n"],
  ['src/service/planted.ts', "import type { SegmentStore } from '../ports/segment-store.js';\nexport type S = SegmentStore;\n"],
  [
    'src/adapters/mysql/planted.ts',
    "import { tableName } from '../kit/segment/segment-rules.js';\nimport { MAX_ID } from '../../core/id.js';\nexport const t = [tableName, MAX_ID];\n",
  ],
  [
    'src/adapters/kit/sql/planted.ts',
    "import { tableName } from '../segment/segment-rules.js';\nimport { MAX_ID } from '../../../core/id.js';\nexport const t = [tableName, MAX_ID];\n",
  ],
  ['src/cli/planted.ts', "import { withIdService } from '../app/wiring.js';\nexport const w = withIdService;\n"],
  [
    'src/app/planted.ts',
    "import { MemorySegmentStore } from '../adapters/memory/memory-segment-store.js';\nexport const m = MemorySegmentStore;\n",
  ],
  ['src/client/planted.ts', "import { SequoiaError } from '../core/errors.js';\nexport const e = SequoiaError;\n"],
];

describe('layer rule (eslint.config.js)', () => {
  it.each(WRONG)('%s: a wrong import fails the lint', async (path, code, message) => {
    const errors = await layerErrors(path, code);
    expect(errors.length).toBeGreaterThan(0);
    expect(errors.join('\n')).toMatch(message);
  });

  it.each(RIGHT)('%s: an import that points inward passes', async (path, code) => {
    expect(await layerErrors(path, code)).toEqual([]);
  });

  it('every folder of src/ is a layer the rule and docs/architecture.md know', async () => {
    const folders = readdirSync(join(ROOT, 'src'), { withFileTypes: true })
      .filter((e) => e.isDirectory())
      .map((e) => e.name)
      .sort();
    expect(folders).toEqual(['adapters', 'app', 'cli', 'client', 'core', 'ports', 'server', 'service']);
    const doc = readFileSync(join(ROOT, 'docs', 'architecture.md'), 'utf8');
    for (const f of folders) expect(doc, f).toContain(`\`src/${f}/\``);
  });

  it('every file docs/architecture.md names exists', () => {
    const doc = readFileSync(join(ROOT, 'docs', 'architecture.md'), 'utf8');
    const named = [...doc.matchAll(/`((?:src|test|adapters|core|ports|service|app|server|cli|client)\/[A-Za-z0-9_./-]+\.ts)`/g)].map(
      (m) => m[1] as string,
    );
    expect(named.length).toBeGreaterThan(30);
    const missing = named.filter((p) => !existsSync(join(ROOT, p)) && !existsSync(join(ROOT, 'src', p)) && !p.includes('…'));
    expect(missing).toEqual([]);
  });
});
