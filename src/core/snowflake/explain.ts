/** `explain` for snowflake IDs: one shape for every layout, presets and custom ones alike. */
import { InvalidArgumentError } from '../errors.js';
import { parseDecimalId } from '../id.js';
import { type Layout, decompose } from './layout.js';
import { versionOf } from './lineage.js';

/**
 * `{ id, kind: 'snowflake', layout, time, timestampMs, <node fields>, sequence }`:
 * the node fields carry the layout's own names (worker, datacenter, shard…).
 * Under a lineage, `lineage` and `version` say which version issued the ID,
 * and `layout` is that version's layout.
 */
export interface ExplainResult {
  readonly id: string;
  readonly kind: 'snowflake';
  readonly layout: string;
  readonly time: string;
  readonly timestampMs: number;
  readonly [field: string]: string | number;
}

/**
 * Decodes a decimal snowflake ID under `layout`.
 *
 * @example
 * explainId('175928847299117063', discord) // { id, kind: 'snowflake', layout: 'discord', time: '2016-04-30T11:18:25.796Z', worker: 1, process: 0, sequence: 7 }
 * explainId(id, orders) // { id, kind: 'snowflake', lineage: 'orders', version: 2, layout: 'orders-2027', time, … }
 */
export function explainId(idText: string, layoutOrLineage: Layout): ExplainResult {
  const id = parseDecimalId(idText);
  if (id === undefined) throw new InvalidArgumentError('id must be a decimal integer from 0 to 9223372036854775807');
  const lineage = layoutOrLineage.lineage;
  // A lineage: the version is picked from the value (its versions hold rising, disjoint ranges).
  const v = lineage ? versionOf(lineage, id) : undefined;
  const layout = v ? v.layout : layoutOrLineage;
  const d = decompose(layout, id);
  if (d.tick > layout.maxTick) throw new InvalidArgumentError(`id ${idText} is beyond layout ${layout.name}'s time range`);
  const out: Record<string, string | number> = {
    id: idText,
    kind: 'snowflake',
    ...(lineage && v ? { lineage: lineage.name, version: v.version } : {}),
    layout: layout.name,
    time: new Date(d.timestampMs).toISOString(),
    timestampMs: d.timestampMs,
  };
  for (const f of layout.fields) if (f.role !== 'sequence') out[f.name] = d.values[f.name] as number;
  out.sequence = d.values[layout.fields.find((f) => f.role === 'sequence')?.name ?? 'sequence'] as number;
  return out as unknown as ExplainResult;
}
