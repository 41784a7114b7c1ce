/**
 * The public API is a checked file: api/exports.txt lists every name each
 * entry exports (kind and name). A change to what users can import fails here
 * until `npm run api:report` rewrites the file, so it shows in review.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
// @ts-expect-error: a plain .mjs script, no declarations
import { REPORT, report } from '../../scripts/api-report.mjs';

describe('the public API report', () => {
  it('api/exports.txt is what the entries export (run `npm run api:report` after a deliberate change)', () => {
    expect(report()).toBe(readFileSync(REPORT as string, 'utf8'));
  }, 60_000);

  it("the main entry exports none of core's internal helpers", () => {
    const main = (report() as string).split('\n## ')[1] ?? '';
    for (const internal of ['splitE8', 'HEX_BYTES', 'idSpaceExhausted', 'ERROR_DOCS', 'ERRORS', 'hexDigitAt', 'exitStatusFor']) {
      expect(main).not.toMatch(new RegExp(`\\b${internal}\\b`));
    }
  }, 60_000);
});
