/**
 * zod's English messages, for the issues a schema leaves to zod ("Invalid
 * input: expected string, received number", "Unrecognized key: …"): the
 * routes' bodies and the configuration say them. The schemas use `zod/mini`,
 * which loads no locale; classic `zod`, with all 64 of its locales, was a
 * large share of `serve`'s start (issue 45, BENCHMARKS.md "Start-up"). Given
 * to each parse, not set in zod's global config, so a host application's own
 * zod settings stay as it made them.
 */
import en from 'zod/v4/locales/en.js';

/** Parse options: `schema.safeParse(value, inEnglish)`. */
export const inEnglish = { error: en().localeError };
