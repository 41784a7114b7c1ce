/**
 * The one tag rule, used by the server, the CLI, the stores and the client
 * (which may import only core/errors, core/id and this file). Leaf's
 * `biz_tag` is any string up to 128 characters and deployments name tags like
 * `order:pay`, so `:` is allowed; nothing that needs escaping in a URL path,
 * a JSON string or a Redis key is.
 */
export const TAG_PATTERN = /^[A-Za-z0-9_.:-]{1,128}$/;

/** The rule in words, for error messages. */
export const TAG_RULE = `must match ${TAG_PATTERN.source} (1-128 letters, digits, _ . : -)`;

export function isValidTag(tag: unknown): tag is string {
  return typeof tag === 'string' && TAG_PATTERN.test(tag);
}
