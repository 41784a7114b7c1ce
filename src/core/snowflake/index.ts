export * from './layout.js';
export * from './planner.js';
export * from './generator.js';
export * from './explain.js';
