import { describe, expect, it } from 'vitest';
import { emptyEvidence } from './report.js';

describe('a scenario is a pass only with evidence', () => {
  it('checked 0 IDs without a refusal: fails', () => {
    expect(emptyEvidence(0, undefined, [])).toMatch(/checked 0 IDs/);
  });

  it('a refusal by design with no ID issued: no failure (reported as refused)', () => {
    expect(emptyEvidence(0, 'start refused with exit status 2', [])).toBeUndefined();
  });

  it('a refusal by design while IDs were issued: fails', () => {
    expect(emptyEvidence(12, 'start refused', [])).toMatch(/12 IDs were issued/);
  });

  it('a fault never seen in effect: fails, even with IDs', () => {
    expect(emptyEvidence(5000, undefined, ['the clock fault (A.faketime) was never seen in effect'])).toMatch(
      /fault did not take effect: the clock fault/,
    );
  });

  it('IDs checked and every fault seen: no failure', () => {
    expect(emptyEvidence(5000, undefined, [])).toBeUndefined();
  });
});
