/**
 * Business-number formats by name, built once at start (a permuted format
 * derives its round keys here, not per request). `?format=` takes a configured
 * name or a key-less spec such as `base62:11`; specs are cached, boundedly.
 */
import {
  type BusinessNumberCodec,
  type BusinessNumberFormat,
  createBusinessNumberCodec,
  resolveBusinessNumberFormat,
} from '../core/business-number/index.js';

const SPEC_CACHE_MAX = 64;

export class FormatRegistry {
  private readonly named: ReadonlyMap<string, BusinessNumberFormat>;
  private readonly codecs = new Map<string, BusinessNumberCodec>();
  private readonly specs = new Map<string, BusinessNumberCodec>();

  constructor(formats: Readonly<Record<string, BusinessNumberFormat>> = {}) {
    this.named = new Map(Object.entries(formats));
    for (const [name, f] of this.named) this.codecs.set(name, createBusinessNumberCodec(f));
  }

  /** The codec for a `?format=` value; throws INVALID_ARGUMENT naming `format`. */
  codec(spec: string): BusinessNumberCodec {
    const c = this.codecs.get(spec) ?? this.specs.get(spec);
    if (c) return c;
    const made = createBusinessNumberCodec(resolveBusinessNumberFormat(spec, this.named, 'format'));
    if (this.specs.size >= SPEC_CACHE_MAX) this.specs.clear();
    this.specs.set(spec, made);
    return made;
  }

  names(): string[] {
    return [...this.named.keys()];
  }
}
