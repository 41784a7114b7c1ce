/** Raw HTTP/1.1 over a socket: bytes in, every answer out, for requests no HTTP client would send. */
import { connect } from 'node:net';
import { ERROR_CODES } from '../../src/core/errors.js';

export interface RawOptions {
  /** Half-close (FIN) right after writing, as `nc -q1` does. Default false: close after `quietMs` of silence. */
  readonly halfClose?: boolean;
  /** Chunks written one event-loop turn apart; default: the payload in one write. */
  readonly chunks?: ReadonlyArray<string | Buffer>;
  readonly localAddress?: string;
  /** Gives up (rejects) after this long without the server closing. Default 5000 ms. */
  readonly timeoutMs?: number;
  /** Without halfClose: how long after the last byte received the client closes. Default 300 ms. */
  readonly quietMs?: number;
}

export interface RawResult {
  readonly raw: Buffer;
  /** Whether the server closed the connection (FIN) rather than the client after a quiet spell. */
  readonly serverClosed: boolean;
  readonly ms: number;
}

/** Writes `payload` to host:port and collects every byte the server sends until it closes. */
export function rawExchange(port: number, payload: string | Buffer, opts: RawOptions = {}): Promise<RawResult> {
  const t0 = performance.now();
  return new Promise((resolve, reject) => {
    const s = connect({ port, host: '127.0.0.1', ...(opts.localAddress ? { localAddress: opts.localAddress } : {}), allowHalfOpen: true });
    const parts: Buffer[] = [];
    let quiet: NodeJS.Timeout | undefined;
    let clientEnded = false;
    const giveUp = setTimeout(() => {
      s.destroy();
      reject(
        new Error(
          `no close from the server within ${opts.timeoutMs ?? 5000} ms; got ${JSON.stringify(Buffer.concat(parts).toString('latin1').slice(0, 500))}`,
        ),
      );
    }, opts.timeoutMs ?? 5000);
    const armQuiet = () => {
      if (opts.halfClose) return;
      clearTimeout(quiet);
      quiet = setTimeout(() => {
        clientEnded = true;
        s.end();
      }, opts.quietMs ?? 300);
    };
    s.on('data', (d: Buffer) => {
      parts.push(d);
      armQuiet();
    });
    s.on('end', () => {
      clearTimeout(giveUp);
      clearTimeout(quiet);
      s.end();
      resolve({ raw: Buffer.concat(parts), serverClosed: !clientEnded, ms: performance.now() - t0 });
    });
    s.on('error', (e: NodeJS.ErrnoException) => {
      clearTimeout(giveUp);
      clearTimeout(quiet);
      // A reset after the server answered and closed is a close.
      if (e.code === 'ECONNRESET' || e.code === 'EPIPE')
        resolve({ raw: Buffer.concat(parts), serverClosed: true, ms: performance.now() - t0 });
      else reject(e);
    });
    s.on('connect', () => {
      void (async () => {
        for (const c of opts.chunks ?? [payload]) {
          if (s.destroyed) return;
          s.write(c);
          await new Promise((r) => setImmediate(r));
        }
        if (opts.halfClose) s.end();
        else armQuiet();
      })();
    });
  });
}

export interface RawResponse {
  readonly status: number;
  readonly headers: Record<string, string>;
  readonly body: string;
}

/** Splits a byte stream into HTTP/1.1 responses (content-length or chunked bodies; none after 1xx, 204, 304). */
export function parseResponses(raw: Buffer): { responses: RawResponse[]; rest: string } {
  const text = raw.toString('latin1');
  const responses: RawResponse[] = [];
  let i = 0;
  while (i < text.length) {
    const headEnd = text.indexOf('\r\n\r\n', i);
    if (headEnd < 0) break;
    const lines = text.slice(i, headEnd).split('\r\n');
    const m = /^HTTP\/1\.[01] (\d{3}) /.exec(lines[0] ?? '');
    if (!m) break;
    const headers: Record<string, string> = {};
    for (const l of lines.slice(1)) {
      const c = l.indexOf(':');
      const k = l.slice(0, c).trim().toLowerCase();
      headers[k] = headers[k] === undefined ? l.slice(c + 1).trim() : `${headers[k]}, ${l.slice(c + 1).trim()}`;
    }
    const status = Number(m[1]);
    let pos = headEnd + 4;
    let body = '';
    if (headers['transfer-encoding']?.includes('chunked')) {
      for (;;) {
        const eol = text.indexOf('\r\n', pos);
        if (eol < 0) return { responses, rest: text.slice(i) };
        const size = parseInt(text.slice(pos, eol), 16);
        pos = eol + 2;
        if (size === 0) {
          pos = text.indexOf('\r\n', pos) + 2;
          break;
        }
        body += text.slice(pos, pos + size);
        pos += size + 2;
      }
    } else {
      const len = status === 204 || status === 304 || status < 200 ? 0 : Number(headers['content-length'] ?? 0);
      // An answer to HEAD has a length but no body: the next answer starts right away.
      if (len > 0 && !text.startsWith('HTTP/1.', pos)) {
        body = text.slice(pos, pos + len);
        pos += len;
      }
    }
    responses.push({ status, headers, body });
    i = pos;
  }
  return { responses, rest: text.slice(i) };
}

/**
 * The contract's error shape: JSON `{"error":{"code","message"}}` with a known
 * code (text/plain `CODE: message` on the Leaf routes), Retry-After on 429/503.
 * Returns what is wrong, or undefined.
 */
export function contractProblem(r: RawResponse): string | undefined {
  if (r.status < 400) return undefined;
  if ((r.status === 429 || r.status === 503) && !/^[1-9][0-9]*$/.test(r.headers['retry-after'] ?? ''))
    return `${r.status} without Retry-After`;
  if (r.body === '') return r.headers['content-length'] === '0' ? `${r.status} with an empty body` : undefined; // HEAD
  const type = r.headers['content-type'] ?? '';
  if (type.startsWith('text/plain')) {
    const code = r.body.split(':')[0] ?? '';
    return (ERROR_CODES as readonly string[]).includes(code) ? undefined : `text answer without a code: ${r.body.slice(0, 100)}`;
  }
  try {
    const j = JSON.parse(r.body) as { error?: { code?: unknown; message?: unknown } };
    if (typeof j.error?.code !== 'string' || !(ERROR_CODES as readonly string[]).includes(j.error.code))
      return `unknown code in ${r.body.slice(0, 200)}`;
    if (typeof j.error.message !== 'string' || j.error.message === '') return `no message in ${r.body.slice(0, 200)}`;
    if (/\n\s+at .+:\d+:\d+/.test(r.body)) return 'a stack trace';
  } catch {
    return `not JSON: ${r.body.slice(0, 200)}`;
  }
  return undefined;
}
