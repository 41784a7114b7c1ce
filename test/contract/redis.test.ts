import { describeWithService } from '../helpers/services.js';
import { probeRedis, redisHarness } from './backends.js';
import { runSegmentStoreContract } from './segment-store-contract.js';

const describeRedis = await describeWithService('Redis', probeRedis);
describeRedis('redis', () => runSegmentStoreContract('redis', redisHarness));
