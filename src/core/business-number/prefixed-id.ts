/**
 * Stripe-style type prefixes on Sequoia IDs: `ord_` + the ID written in a
 * business-number format, so a 63-bit segment or snowflake ID reads as
 * `ord_1TCKi1nFuNh` and says what it names.
 *
 * The prefix follows the TypeID prefix rule (one rule for both: lowercase
 * a–z and `_`, at most 63, not starting or ending with `_`), so one grammar
 * splits both at the last `_`. The default format is `base62:11`: every
 * 63-bit ID fits 11 base62 symbols, and at a fixed width the text sorts
 * like the number (the alphabet is in ASCII order). Any key-less
 * business-number format (`crockford32:13:check`, `decimal`, …) or a
 * configured one can be used instead; the reader must then be told it
 * (`sequoia explain --format`), since the text does not name its format.
 *
 * A TypeID's suffix is 26 symbols; an 11-symbol base62 suffix never is, so
 * `explain` tells the two apart by length.
 */
import { InvalidArgumentError } from '../errors.js';
import type { Id } from '../id.js';
import { TYPEID_PREFIX_RULE, isValidTypeIdPrefix } from '../typeid/typeid.js';
import { type BusinessNumberCodec, type BusinessNumberFormat, createBusinessNumberCodec } from './business-number.js';
import { type ExplainResult, explainId } from '../snowflake/explain.js';
import type { Layout } from '../snowflake/layout.js';

export const DEFAULT_PREFIXED_FORMAT: BusinessNumberFormat = { kind: 'base62', width: 11 };

export interface PrefixedIdCodec {
  readonly prefix: string;
  readonly format: BusinessNumberFormat;
  /** ID → `prefix_text`. Throws as the format's codec does (INVALID_ARGUMENT, ID_SPACE_EXHAUSTED). */
  encode(id: Id): string;
  /** `prefix_text` → ID. Throws INVALID_ARGUMENT for another prefix or a text that is not of the format. */
  decode(text: string): bigint;
}

/** Splits `prefix_rest` at the last `_`; undefined when there is none or the prefix breaks the rule. */
export function splitPrefixedId(text: string): { prefix: string; rest: string } | undefined {
  if (typeof text !== 'string') return undefined;
  const sep = text.lastIndexOf('_');
  if (sep <= 0) return undefined;
  const prefix = text.slice(0, sep);
  return isValidTypeIdPrefix(prefix) ? { prefix, rest: text.slice(sep + 1) } : undefined;
}

/**
 * A codec for IDs of one prefix.
 * @example
 * const orders = createPrefixedIdCodec('ord');
 * orders.encode(1234567890123456789n) === 'ord_1TCKi1nFuNh'
 * orders.decode('ord_00000004C92') === 1000000n
 */
export function createPrefixedIdCodec(prefix: string, format: BusinessNumberFormat = DEFAULT_PREFIXED_FORMAT): PrefixedIdCodec {
  if (prefix === '' || !isValidTypeIdPrefix(prefix)) {
    throw new InvalidArgumentError(`prefix ${JSON.stringify(String(prefix).slice(0, 80))} is not a type prefix: ${TYPEID_PREFIX_RULE}`);
  }
  const codec: BusinessNumberCodec = createBusinessNumberCodec(format);
  const head = `${prefix}_`;
  return {
    prefix,
    format: codec.format,
    encode: (id) => head + codec.encode(id),
    decode(text: string): bigint {
      const parts = splitPrefixedId(text);
      if (parts === undefined) throw new InvalidArgumentError(`${show(text)} is not a prefixed ID: expected ${head}…`);
      if (parts.prefix !== prefix) {
        throw new InvalidArgumentError(`${show(text)} has prefix ${JSON.stringify(parts.prefix)}, expected ${JSON.stringify(prefix)}`);
      }
      return decodeSuffix(text, parts.rest, codec);
    },
  };
}

function show(text: unknown): string {
  return JSON.stringify(String(text).slice(0, 100));
}

function decodeSuffix(text: string, rest: string, codec: BusinessNumberCodec): bigint {
  try {
    return codec.decode(rest);
  } catch (e) {
    if (e instanceof InvalidArgumentError)
      throw new InvalidArgumentError(`${show(text)}: the part after the prefix is not an ID: ${e.message}`);
    throw e;
  }
}

export interface ParsedPrefixedId {
  readonly prefix: string;
  /** The ID. */
  readonly value: bigint;
}

/**
 * Reads any prefixed ID whose suffix is in `format` (default base62:11),
 * whatever its prefix. Throws INVALID_ARGUMENT naming the bad part.
 * @example parsePrefixedId('ord_00000004C92') // { prefix: 'ord', value: 1000000n }
 */
export function parsePrefixedId(text: string, format: BusinessNumberFormat = DEFAULT_PREFIXED_FORMAT): ParsedPrefixedId {
  const parts = splitPrefixedId(text);
  if (parts === undefined) {
    throw new InvalidArgumentError(`${show(text)} is not a prefixed ID: expected a type prefix (${TYPEID_PREFIX_RULE}), "_", then the ID`);
  }
  return { prefix: parts.prefix, value: decodeSuffix(text, parts.rest, createBusinessNumberCodec(format)) };
}

/** A format written as a `--format` / `?format=` spec (`base62:11`, `crockford32:13:check`); a permuted one by its kind only. */
export function businessNumberFormatSpec(format: BusinessNumberFormat): string {
  switch (format.kind) {
    case 'decimal':
    case 'permuted-base32':
      return format.kind;
    case 'hex':
    case 'base62':
      return format.width === undefined ? format.kind : `${format.kind}:${format.width}`;
    case 'crockford32':
      return `${format.kind}${format.width === undefined ? '' : `:${format.width}`}${format.check === true ? ':check' : ''}`;
  }
}

export type PrefixedExplainResult = Omit<ExplainResult, 'id'> & {
  /** The prefixed text as given. */
  readonly id: string;
  readonly prefix: string;
  /** The format its suffix was read in, as a spec. */
  readonly format: string;
  /** The ID, decimal. */
  readonly value: string;
};

/**
 * `explainId` for a prefixed snowflake ID: strips the prefix, decodes the
 * suffix in `format` (default base62:11) and decodes the ID under `layout`,
 * saying which prefix and format it read.
 * @example explainPrefixedId('ord_…', getLayout('twitter')) // { id: 'ord_…', prefix: 'ord', format: 'base62:11', value, kind: 'snowflake', time, … }
 */
export function explainPrefixedId(
  text: string,
  layout: Layout,
  format: BusinessNumberFormat = DEFAULT_PREFIXED_FORMAT,
): PrefixedExplainResult {
  const { prefix, value } = parsePrefixedId(text, format);
  const decimal = value.toString();
  return { ...explainId(decimal, layout), id: text, prefix, format: businessNumberFormatSpec(format), value: decimal };
}
