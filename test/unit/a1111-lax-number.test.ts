import { describe, expect, it } from 'vitest';
import { MAX_NUMERIC_STRING_CHARS, parseNumericString } from '../../src/request/lax-number.ts';
import { NUMBER_ERROR, txt2imgSchema } from '../../src/api/a1111/schema.ts';

describe('numeric strings (red-team: ReDoS in laxFloat)', () => {
  it('parses what A1111 clients send', () => {
    expect(parseNumericString(' 7.5 ', 'float')).toBe(7.5);
    expect(parseNumericString('.4', 'float')).toBe(0.4);
    expect(parseNumericString('7.', 'float')).toBe(7);
    expect(parseNumericString('-1e3', 'float')).toBe(-1000);
    expect(parseNumericString('+20', 'int')).toBe(20);
    expect(parseNumericString('2.5', 'int')).toBeUndefined();
    expect(parseNumericString('1.2.3', 'float')).toBeUndefined();
    expect(parseNumericString('e5', 'float')).toBeUndefined();
    expect(parseNumericString('.', 'float')).toBeUndefined();
  });

  it('refuses numeric strings longer than any real number as a type error', () => {
    const long = '1'.repeat(MAX_NUMERIC_STRING_CHARS + 1);
    const r = txt2imgSchema.safeParse({ cfg_scale: long, steps: long });
    expect(r.success).toBe(false);
    expect(r.error?.issues.map((i) => [i.path.join('.'), i.message])).toEqual(expect.arrayContaining([['cfg_scale', NUMBER_ERROR]]));
  });

  it('a 64 000-digit string followed by junk is refused at once, not after quadratic backtracking', () => {
    // The old pattern took ~6 s for one such field on this machine (45 s for two). The budget is a very
    // generous multiple of the linear parse (well under a millisecond), so CPU load cannot make it flake.
    const hostile = `${'1'.repeat(64_000)}x`;
    const t0 = performance.now();
    const r = txt2imgSchema.safeParse({ cfg_scale: hostile, denoising_strength: hostile, eta: hostile, steps: hostile });
    const ms = performance.now() - t0;
    expect(r.success).toBe(false);
    expect(ms).toBeLessThan(1_500);
  });
});
