/**
 * The torture log: one append-only JSON-lines file per client, one line per
 * request, written before the checker ever looks. Nothing here knows the
 * project's code: a record is what a client saw on the wire.
 */
import { appendFileSync, mkdirSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

export type Generator = 'segment' | 'snowflake' | 'uuid';

export interface RequestRecord {
  /** The client that made the request (one log file each). */
  readonly client: string;
  /** The server (its name in the scenario) the request went to. */
  readonly server: string;
  /** The process that answered (the `sequoia-pid` header); absent when nothing answered. */
  readonly pid?: number | undefined;
  /** Wall-clock ms (performance.timeOrigin + now), of the harness, not the server. */
  readonly start: number;
  readonly end: number;
  /** `v1-segment`, `leaf-segment`, `v1-snowflake`, `leaf-snowflake`, `sdk-segment`, … */
  readonly route: string;
  readonly generator: Generator;
  /** The tag (segment) or the layout (snowflake). */
  readonly key: string;
  /** IDs asked for. */
  readonly asked: number;
  /** IDs received, decimal strings, in the order the server gave them. */
  readonly ids?: readonly string[] | undefined;
  /** The error code (the server's, or NETWORK / TIMEOUT / BAD_ANSWER when there was none). */
  readonly error?: string | undefined;
  readonly status?: number | undefined;
  /** The start of an error answer that carried no code (it breaks the error shape the API promises). */
  readonly body?: string | undefined;
}

export class Recorder {
  private readonly file: string;
  readonly records: RequestRecord[] = [];

  constructor(
    dir: string,
    readonly client: string,
  ) {
    mkdirSync(dir, { recursive: true });
    this.file = join(dir, `${client}.jsonl`);
  }

  /** Appends at once (synchronously): a harness killed mid-run leaves a log that holds every answer seen so far. */
  record(r: Omit<RequestRecord, 'client'>): void {
    const full: RequestRecord = { client: this.client, ...r };
    this.records.push(full);
    appendFileSync(this.file, `${JSON.stringify(full)}\n`);
  }
}

/** Every record of every client log in `dir`. */
export function readLog(dir: string): RequestRecord[] {
  const out: RequestRecord[] = [];
  for (const f of readdirSync(dir)
    .filter((n) => n.endsWith('.jsonl'))
    .sort()) {
    for (const line of readFileSync(join(dir, f), 'utf8').split('\n')) if (line !== '') out.push(JSON.parse(line) as RequestRecord);
  }
  return out;
}
