/**
 * The part of a server's start that is not the store: the HTTP app
 * (fastify), the logger (pino), the metrics (prom-client) and the services'
 * wiring. start-server.ts loads this module while the store's and the state
 * dir's threads start (off-loop.ts), so a start pays for the module loading
 * and the threads' start-up at once, on two cores, not one after the other.
 */
export { pino } from 'pino';
export { buildApp } from '../server/build-app.js';
export { SequoiaMetrics } from '../server/metrics.js';
export { createIdService, createSnowflakeService } from './wiring.js';
