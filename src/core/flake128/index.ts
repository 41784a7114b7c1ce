export * from './flake128.js';
