export * from './typeid.js';
