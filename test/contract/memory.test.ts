import { memoryHarness } from './backends.js';
import { runSegmentStoreContract } from './segment-store-contract.js';

runSegmentStoreContract('memory', async () => memoryHarness(), { inProcessOnly: true });
