/** Decodes a snowflake ID under a layout: its time and every field. */
import { InvalidArgumentError } from '../errors.js';
import { parseDecimalId } from '../id.js';
import { type Layout, decompose } from './layout.js';

export interface ExplainResult {
  readonly id: string;
  readonly layout: string;
  readonly time: string;
  readonly timestampMs: number;
  readonly [field: string]: string | number;
}

export function explainId(idText: string, layout: Layout): ExplainResult {
  const id = parseDecimalId(idText);
  if (id === undefined) throw new InvalidArgumentError('id must be a decimal integer from 0 to 9223372036854775807');
  const d = decompose(layout, id);
  if (d.tick > layout.maxTick) throw new InvalidArgumentError(`id ${idText} is beyond layout ${layout.name}'s time range`);
  const out: Record<string, string | number> = { id: idText, layout: layout.name, time: new Date(d.timestampMs).toISOString(), timestampMs: d.timestampMs };
  for (const f of layout.fields) if (f.role !== 'sequence') out[f.name] = d.values[f.name] as number;
  out.sequence = d.values[layout.fields.find((f) => f.role === 'sequence')?.name ?? 'sequence'] as number;
  return out as unknown as ExplainResult;
}
