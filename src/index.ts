/**
 * Sequoia as a library: the segment allocator and its stores in-process.
 *
 * @example
 * const service = new IdService({ store: new SqliteSegmentStore({ path: './ids.db' }), marks: new FileHighWaterMarkStore('./state') });
 * await service.start();
 * await service.createTag({ tag: 'order' });
 * const id = await service.next('order'); // number below 2^53, bigint above
 */
export * from './core/errors.js';
export * from './core/id.js';
export { SegmentBuffer, type Segment } from './core/segment/segment-buffer.js';
export { nextStep } from './core/segment/step-policy.js';
export type { Clock } from './ports/clock.js';
export type { SegmentStore, TagInfo, Allocation, NewTag, TagUpdate } from './ports/segment-store.js';
export type { HighWaterMarkStore } from './ports/high-water-mark-store.js';
export { MemorySegmentStore } from './adapters/memory/memory-segment-store.js';
export { SqliteSegmentStore } from './adapters/sqlite/sqlite-segment-store.js';
export { FileHighWaterMarkStore, MemoryHighWaterMarkStore } from './adapters/state-dir/file-high-water-mark-store.js';
export { StateDir } from './adapters/state-dir/state-dir.js';
export { createStore } from './adapters/create-store.js';
export { IdService, type IdServiceOptions } from './service/id-service.js';
export { TagAllocator } from './service/tag-allocator.js';
export { buildApp } from './server/build-app.js';
export { VERSION } from './version.js';
export * from './core/uuid/index.js';
export * from './core/objectid/index.js';
export * from './core/flake128/index.js';
export * from './core/codecs/index.js';
export * from './core/permutation/index.js';
export * from './core/business-number/index.js';
export * from './core/snowflake/index.js';
export { type Random, PooledSystemRandom, systemRandom } from './ports/random.js';
export { systemClock } from './ports/clock.js';
