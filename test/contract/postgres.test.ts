import { describeWithService } from '../helpers/services.js';
import { postgresHarness, probePostgres } from './backends.js';
import { runSegmentStoreContract } from './segment-store-contract.js';

const describePg = await describeWithService('PostgreSQL', probePostgres);
describePg('postgres', () => runSegmentStoreContract('postgres', postgresHarness));
