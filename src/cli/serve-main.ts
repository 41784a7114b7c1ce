/**
 * `sequoia serve`'s own entry (main.ts loads it instead of the command
 * table): the program with its one command. Bundled as one file
 * (scripts/bundle.mjs), so a start resolves and links a handful of modules,
 * not the command table's many chunks.
 */
import { newProgram, runProgram } from './program.js';
import { registerServe } from './serve-command.js';

const program = newProgram();
await registerServe(program);
await runProgram(program);
