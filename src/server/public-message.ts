/**
 * What a client may read of an error. An error that names where it happened
 * (a state directory's path, a store's host, a ZooKeeper node) carries that as
 * `operatorDetail` and a message without it as `publicMessage` from the throw
 * site (core/errors.ts `located`), so nothing here reads message text: every
 * error answer (JSON, Leaf's text) sends `publicMessage`, the log gets both
 * (docs/security.md).
 */
import { SequoiaError } from '../core/errors.js';

/** What a client reads of an error: a SequoiaError's public message; anything else a client is never told the text of. */
export function answerText(err: unknown, otherwise: string): string {
  return err instanceof SequoiaError ? err.publicMessage : otherwise;
}
