import { MemorySegmentStore } from '../../src/adapters/memory/memory-segment-store.js';
import { runSegmentStoreContract } from './segment-store-contract.js';

runSegmentStoreContract('memory', async () => {
  const store = new MemorySegmentStore();
  return {
    store,
    snapshot: async (tag) => (await store.getTag(tag))?.maxId,
    restore: async (tag, snap) => store.restore(tag, snap as bigint),
    cleanup: () => store.close(),
  };
}, { inProcessOnly: true });
