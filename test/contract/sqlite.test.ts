import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sqliteHarness } from './backends.js';
import { runSegmentStoreContract } from './segment-store-contract.js';

runSegmentStoreContract('sqlite (file, WAL)', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'sequoia-contract-sqlite-'));
  const h = sqliteHarness(dir, 'sequoia');
  return {
    ...h,
    cleanup: async () => {
      await h.cleanup();
      rmSync(dir, { recursive: true, force: true });
    },
  };
});
