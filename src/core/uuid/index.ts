export * from './uuid-text.js';
export * from './uuid-v4.js';
export * from './uuid-v7.js';
export * from './ulid.js';
