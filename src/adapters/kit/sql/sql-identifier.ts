/**
 * User-named tables and columns (`--table orders`, `--table shop.orders`):
 * letters, digits, `_` and `$`, one optional schema/database qualifier;
 * quoted per engine so reserved words work. Anything else is INVALID_ARGUMENT.
 */
import { InvalidArgumentError } from '../../../core/errors.js';

const PART = /^[A-Za-z_][A-Za-z0-9_$]{0,63}$/;

export function sqlIdentifier(name: string, what: string, quote: '"' | '`', qualified: boolean): string {
  const parts = name.split('.');
  if (parts.length > (qualified ? 2 : 1) || !parts.every((p) => PART.test(p))) {
    throw new InvalidArgumentError(
      `${what} must be a plain name (letters, digits, _ and $${qualified ? ', optionally schema.name' : ''}), got ${JSON.stringify(name)}`,
    );
  }
  return parts.map((p) => `${quote}${p}${quote}`).join('.');
}
