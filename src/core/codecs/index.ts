export * from './base62.js';
export * from './crockford32.js';
export * from './decimal.js';
export * from './hex.js';
