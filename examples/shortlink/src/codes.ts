/**
 * Short codes from Sequoia IDs. The code is a function of the ID and nothing
 * else, so distinct IDs give distinct codes and the database's unique index on
 * `short_code` only ever catches a bug, never a chance collision.
 *
 * Plain Base62 is a change of notation: it is as sequential as the ID, and
 * anyone can decode it and enumerate its neighbours. With a key, the ID goes
 * through Sequoia's keyed permutation first, so neighbouring IDs give
 * unrelated codes of a fixed 8 characters. That hides volume and order; it is
 * still not access control (a link is public to whoever has its code).
 */
import { FeistelPermutation, encodeBase62 } from 'sequoia-id';

export interface CodeScheme {
  /** `plain` or `permuted`: shown at start-up so operators know which one is live. */
  readonly name: string;
  /** The code of an ID; throws when the ID is outside the scheme's space. */
  encode(id: bigint): string;
}

export const CODE_PATTERN = /^[0-9A-Za-z]{1,16}$/;

/** Base62 of the ID: short (4 characters up to 14.7 million), sequential, decodable by anyone. */
export function plainCodes(): CodeScheme {
  return { name: 'plain', encode: (id) => encodeBase62(id) };
}

const PERMUTED_WIDTH = 8;
/** Every 8-character Base62 code: 62^8 ≈ 2.2·10^14 links. */
const PERMUTED_SPACE = 62n ** BigInt(PERMUTED_WIDTH);

/** The keyed permutation over [0, 62^8), then Base62 padded to 8 characters. */
export function permutedCodes(key: string): CodeScheme {
  const p = new FeistelPermutation({ bits: 48, key, max: PERMUTED_SPACE });
  return {
    name: 'permuted',
    encode(id) {
      if (id >= PERMUTED_SPACE) throw new Error(`id ${id} is beyond the ${PERMUTED_WIDTH}-character code space`);
      return encodeBase62(p.encrypt(id), PERMUTED_WIDTH);
    },
  };
}
