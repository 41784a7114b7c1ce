export * from './business-number.js';
export * from './daily-number.js';
export * from './prefixed-id.js';
