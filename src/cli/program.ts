/**
 * The `sequoia` program's frame, shared by the command table (commands.ts)
 * and `serve`'s own entry (serve-main.ts): its name and version, how a
 * parse error is said, and the exit status of each outcome (bad input 2, a
 * store that cannot be reached 1, success 0).
 */
import { Command, CommanderError } from 'commander';
import { SequoiaError, exitStatusFor } from '../core/errors.js';
import { VERSION } from '../version.js';

export function newProgram(): Command {
  return new Command()
    .name('sequoia')
    .description('Distributed unique-ID service: segments, snowflakes, UUIDv7')
    .version(VERSION)
    .exitOverride()
    .configureOutput({ outputError: (str, write) => write(`sequoia: ${str.replace(/^error: /, '')}`) });
}

/** Parses the process's arguments and runs the command; the outcome becomes the exit status. */
export async function runProgram(program: Command): Promise<void> {
  try {
    await program.parseAsync(process.argv);
  } catch (e) {
    process.exitCode = exitCodeFor(e);
  }
}

function exitCodeFor(e: unknown): number {
  if (e instanceof CommanderError) {
    if (e.code === 'commander.helpDisplayed' || e.code === 'commander.version' || e.exitCode === 0) return 0;
    return 2;
  }
  if (e instanceof SequoiaError) {
    console.error(`sequoia: ${e.code}: ${e.message}`);
    return exitStatusFor(e);
  }
  console.error(`sequoia: ${e instanceof Error ? e.message : String(e)}`);
  return 1;
}
