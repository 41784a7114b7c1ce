export * from './business-number.js';
