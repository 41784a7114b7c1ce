/** Paths of Leaf's own API: every error under them (404, 405 and the answers written below fastify included) is Leaf's `text/plain` `CODE: message`. */
const LEAF_PREFIXES = ['/api/segment/', '/api/snowflake/', '/api/decode/'];

/** Whether a request URL (path and query) lies under Leaf's API. */
export function isLeafPath(url: string | undefined): boolean {
  return url !== undefined && LEAF_PREFIXES.some((p) => url.startsWith(p));
}
