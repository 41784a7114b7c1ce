/**
 * What the `sequoia bench pk` targets share: the scratch name rule, the
 * marker every scratch object carries (so a target can prove it made what it
 * drops), and the table and column names of a kind.
 */
import { randomBytes } from 'node:crypto';
import { InvalidArgumentError } from '../../../core/errors.js';
import { PK_KIND_NAMES } from '../../../core/pk-bench/pk-kind-names.js';
import type { PkKeyType, PkKindSpec, PkTableShape } from '../../../ports/pk-bench-target.js';

/** The tool's signature in every marker: a leftover is recognised by it. */
export const PK_MARKER_TOOL = 'sequoia bench pk';
/** The marker table inside the scratch object. */
export const PK_MARKER_TABLE = 'sequoia_bench_pk_marker';
export const DEFAULT_PK_SCRATCH = 'sequoia_bench_pk';

/** A scratch schema/database name: a plain identifier, so it never needs quoting tricks. */
export function checkScratchName(name: string): string {
  if (!/^[a-z_][a-z0-9_]{0,62}$/.test(name)) {
    throw new InvalidArgumentError(`--scratch must be a lowercase identifier (a-z, 0-9, _; at most 63), got ${JSON.stringify(name)}`);
  }
  return name;
}

/** A run id: what the marker names, so this run drops only its own scratch object. */
export function newRunId(): string {
  return `${new Date().toISOString()}/${process.pid}/${randomBytes(4).toString('hex')}`;
}

/** `pk_uuidv4_text` for `uuidv4-text`. */
export function pkTableName(kind: Pick<PkKindSpec, 'name'>): string {
  return `pk_${kind.name.replace(/[^a-z0-9]/g, '_')}`;
}

/** The tables a run can make: a leftover's tables are dropped by these names only. */
const PK_KIND_TABLES: readonly string[] = PK_KIND_NAMES.map((name) => pkTableName({ name }));

/** Of the tables found in a scratch object, those a run can make: no other table is ever dropped. */
export function kindTables(found: readonly string[]): string[] {
  return found.filter((t) => PK_KIND_TABLES.includes(t));
}

/** A dialect's column type for each kind of key; text takes the kind's length (36 when it names none). */
export type PkKeyTypes = Readonly<Record<Exclude<PkKeyType, 'text'>, string>> & { readonly text: (length: number) => string };

/** The key column's type of `kind` in a dialect: one choice, each dialect only its table. */
export function keyColumnType(kind: Pick<PkKindSpec, 'keyType' | 'textLength'>, types: PkKeyTypes): string {
  return kind.keyType === 'text' ? types.text(kind.textLength ?? 36) : types[kind.keyType];
}

/** k1..kN. */
export function intColumns(shape: PkTableShape): string[] {
  return Array.from({ length: shape.indexes }, (_, i) => `k${i + 1}`);
}

/** The refusal for an object that exists already. */
export function refuseExisting(what: string, marked: boolean): InvalidArgumentError {
  return new InvalidArgumentError(
    marked
      ? `${what} exists: it was left by an earlier \`${PK_MARKER_TOOL}\` run (its marker says so); ` +
          'drop it with `sequoia bench pk --db URL --drop-leftover`, or choose another name with --scratch'
      : `${what} exists and was not created by \`${PK_MARKER_TOOL}\` (no marker): it is left untouched; choose another name with --scratch`,
  );
}

/** What a scratch object's marker says. */
export interface PkMarker {
  readonly tool: string;
  readonly run_id: string;
}

/** A scratch object left by an earlier run, as `--drop-leftover` sees it on one engine. */
export interface Leftover {
  exists(): Promise<boolean>;
  /** Undefined when the object has no marker (table). */
  marker(): Promise<PkMarker | undefined>;
  /** Drops the object; called only once its marker proved it the tool's. */
  drop(): Promise<void>;
}

/**
 * `--drop-leftover` on any engine: `what` (e.g. `PostgreSQL schema x`) is
 * dropped only when it exists and carries the tool's marker; anything else is
 * refused and left untouched. Answers the id of the run that left it.
 */
export async function dropLeftover(what: string, leftover: Leftover): Promise<string> {
  if (!(await leftover.exists())) throw new InvalidArgumentError(`${what} does not exist: nothing to drop`);
  const m = await leftover.marker();
  if (m?.tool !== PK_MARKER_TOOL) throw refuseExisting(what, false);
  await leftover.drop();
  return m.run_id;
}
