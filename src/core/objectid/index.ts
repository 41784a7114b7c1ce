export * from './object-id.js';
