import { describe, expect, it } from 'vitest';
import { RequestError } from '../../src/api/a1111/errors.ts';
import { requestPriority } from '../../src/api/priority.ts';

describe('requestPriority: X-Priority header and body priority → Temporal priority key', () => {
  it('defaults to 3, reads the header or the body, 1 = most urgent … 5', () => {
    expect(requestPriority(undefined, {})).toBe(3);
    expect(requestPriority('1', {})).toBe(1);
    expect(requestPriority(' 5 ', undefined)).toBe(5);
    expect(requestPriority(undefined, { priority: 2 })).toBe(2);
    expect(requestPriority(['4', '1'], { priority: '4' })).toBe(4);
  });

  it.each([['0'], ['6'], ['2.5'], ['high'], ['-1']])('refuses X-Priority %s naming the header', (v) => {
    expect(() => requestPriority(v, {})).toThrow(RequestError);
    try {
      requestPriority(v, {});
    } catch (e) {
      expect((e as RequestError).field).toBe('X-Priority');
      expect((e as RequestError).status).toBe(422);
    }
  });

  it('refuses a body priority out of range, and header and body that disagree', () => {
    expect(() => requestPriority(undefined, { priority: 9 })).toThrow(/priority must be an integer from 1/);
    expect(() => requestPriority('1', { priority: 5 })).toThrow(/disagree/);
  });
});
