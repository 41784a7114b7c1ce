/** What `sequoia explain ID --store URL` says of a snowflake ID's worker id, as the lease-ledger tests read it. */
import { expect } from 'vitest';

export interface Lease {
  workerId: number;
  tick: number;
  heldBy: Array<{
    host: string;
    pid: number;
    instance: string;
    version: string;
    generation: number;
    began: string | null;
    released: boolean;
  }>;
  message: string;
}

/** A command's stdout, once it exited 0. */
export function ok(r: { status: number | null; stdout: string; stderr: string }): string {
  expect(r.status, r.stderr + r.stdout).toBe(0);
  return r.stdout;
}
