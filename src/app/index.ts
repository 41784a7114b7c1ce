/**
 * `sequoia-id/server`: the segment service with its stores, the snowflake
 * service with its worker-id providers, and the HTTP server, in-process.
 * Drivers load with this entry; `sequoia` alone loads none.
 *
 * @example
 * import { IdService, SqliteSegmentStore, FileHighWaterMarkStore } from 'sequoia-id/server';
 * const service = new IdService({ store: new SqliteSegmentStore({ path: './ids.db' }), marks: new FileHighWaterMarkStore('./state') });
 * await service.start();
 * await service.createTag({ tag: 'order' });
 * const id = await service.next('order'); // number below 2^53, bigint above
 */
export type { SegmentStore, TagInfo, Allocation, NewTag, TagUpdate } from '../ports/segment-store.js';
export type { HighWaterMarkStore } from '../ports/high-water-mark-store.js';
export type { WorkerIdProvider } from '../ports/worker-id-provider.js';
export type { WorkerLeaseStore } from '../ports/worker-lease-store.js';
export { MemorySegmentStore } from '../adapters/memory/memory-segment-store.js';
export { SqliteSegmentStore } from '../adapters/sqlite/sqlite-segment-store.js';
export { MemoryHighWaterMarkStore } from '../adapters/memory/memory-high-water-mark-store.js';
// The state dir as library users meet it: the durable store of their marks.
export { StateDir as FileHighWaterMarkStore } from '../adapters/state-dir/state-dir.js';
export { createStore } from './stores.js';
export { createWorkerIdProvider } from './worker-id-providers.js';
export { IdService, type IdServiceOptions } from '../service/id-service.js';
export { DailyNumbers, type DailyNumbersOptions } from '../service/daily-numbers.js';
export type { TagAllocator } from '../service/tag-allocator.js';
export { SnowflakeService } from '../service/snowflake-service.js';
export { buildApp } from '../server/build-app.js';
export { startServer, type RunningServer } from './start-server.js';
export { resolveConfig, type ServeConfig } from './config.js';
