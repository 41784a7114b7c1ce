export * from './feistel-permutation.js';
