/**
 * What this service agrees to redirect to. A short-link service is an open
 * redirector by design, so the rules are about not becoming a worse one:
 * only http(s) (no `javascript:`, `data:`, `file:`), no credentials in the
 * URL (they would leak into every redirect and browser history), a length a
 * browser and a database index can take.
 */
export const MAX_URL_LENGTH = 2048;
const SCHEMES = new Set(['http:', 'https:']);

export type UrlCheck = { ok: true; url: string } | { ok: false; message: string };

/** The URL as it will be stored and sent in `Location` (WHATWG-normalized), or why not. */
export function checkLongUrl(input: unknown): UrlCheck {
  if (typeof input !== 'string' || input.length === 0) return { ok: false, message: 'url must be a non-empty string' };
  if (input.length > MAX_URL_LENGTH) return { ok: false, message: `url must be at most ${MAX_URL_LENGTH} characters` };
  // The WHATWG parser silently strips these; a URL that needs stripping was not meant for us.
  if (hasSpaceOrControl(input)) return { ok: false, message: 'url must not contain spaces or control characters' };
  let u: URL;
  try {
    u = new URL(input);
  } catch {
    return { ok: false, message: 'url is not an absolute URL' };
  }
  if (!SCHEMES.has(u.protocol)) return { ok: false, message: `url scheme must be http or https, got ${u.protocol.slice(0, -1)}` };
  if (u.hostname === '') return { ok: false, message: 'url must have a host' };
  if (u.username !== '' || u.password !== '') return { ok: false, message: 'url must not contain a user name or password' };
  if (u.href.length > MAX_URL_LENGTH) return { ok: false, message: `url must be at most ${MAX_URL_LENGTH} characters once normalized` };
  return { ok: true, url: u.href };
}

function hasSpaceOrControl(s: string): boolean {
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c <= 0x20 || c === 0x7f) return true;
  }
  return false;
}

/** Idempotency keys: what the client sends, unchanged; printable ASCII so logs and the VARCHAR(64) column hold it as is. */
export const IDEMPOTENCY_KEY = /^[\x21-\x7e]{1,64}$/;
