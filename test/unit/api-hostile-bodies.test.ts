/** Red-team findings on request bodies: deep nesting, unbounded strings, the Idempotency-Key fingerprint. */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MAX_STRING_CHARS } from '../../src/api/body-shape.ts';
import { canonicalJson, requestFingerprint } from '../../src/renders/render-ids.ts';
import { RenderFailedError } from '../../src/renders/render-service.ts';
import { makePng } from '../support/fixtures.ts';
import { startTestFront, type TestFront } from '../support/front.ts';

let front: TestFront;
beforeAll(async () => {
  front = await startTestFront();
});
afterAll(() => front.close());

/** JSON text nested `depth` deep (built as text: JSON.stringify itself overflows on such values). */
const nestedJson = (depth: number): string => `${'{"a":['.repeat(depth)}1${']}'.repeat(depth)}`;
const nested = (depth: number): unknown => JSON.parse(nestedJson(depth));

async function post(url: string, body: unknown) {
  const payload = typeof body === 'string' ? body : JSON.stringify(body);
  const res = await front.app.inject({ method: 'POST', url, headers: { 'content-type': 'application/json' }, payload });
  return { status: res.statusCode, json: res.json<Record<string, unknown>>() };
}

describe('deep JSON (red-team: depth 5000 rendered, then answered 500)', () => {
  for (const field of ['comments', 'override_settings', 'script_args', 'alwayson_scripts']) {
    it(`${field} nested 5000 deep: a 400 naming the field, nothing started`, async () => {
      const before = front.starts.length;
      const value = field === 'script_args' ? `[${nestedJson(2500)}]` : `{"k":${nestedJson(2500)}}`;
      const r = await post('/sdapi/v1/txt2img', `{"prompt":"p","model":"imagegen-flux-schnell","${field}":${value}}`);
      expect(r.status).toBe(400);
      expect(String(r.json.field)).toMatch(new RegExp(`^${field}`));
      expect(r.json.detail).toMatch(/nested deeper than/);
      expect(front.starts.length).toBe(before);
    });
  }

  it('any route: /sdapi/v1/options too', async () => {
    const r = await post('/sdapi/v1/options', `{"samples_format":${nestedJson(2500)}}`);
    expect(r.status).toBe(400);
    expect(r.json.error).toBe('HTTPException');
  });

  it('the fingerprint refuses rather than overflowing', () => {
    expect(() => requestFingerprint('txt2img', nested(50_000))).toThrow(/nested deeper/);
  });
});

describe('string lengths (red-team: only prompt had a cap)', () => {
  for (const [field, value] of [
    ['sampler_name', 'x'.repeat(MAX_STRING_CHARS + 1)],
    ['hr_prompt', 'x'.repeat(MAX_STRING_CHARS + 1)],
    ['styles', ['x'.repeat(MAX_STRING_CHARS + 1)]],
    ['override_settings', { sd_vae: 'x'.repeat(MAX_STRING_CHARS + 1) }],
  ] as const) {
    it(`${field}: a long string is a 422 naming it, nothing started`, async () => {
      const before = front.starts.length;
      const r = await post('/sdapi/v1/txt2img', { prompt: 'p', model: 'imagegen-flux-schnell', [field]: value });
      expect(r.status).toBe(422);
      expect(String(r.json.field)).toMatch(new RegExp(`^${field}`));
      expect(r.json.detail).toMatch(/at most 16384 characters/);
      expect(front.starts.length).toBe(before);
    });
  }

  it('image fields take images far longer than that', async () => {
    const image = makePng(128, 128, (x, y) => [(x * 7919 + y * 104729) % 251, (x * y) % 253, (x ^ y) & 255, 255]).toString('base64');
    expect(image.length).toBeGreaterThan(MAX_STRING_CHARS);
    const before = front.starts.length;
    front.outcome = async (s) => {
      throw new RenderFailedError(s.renderId, 503, 'ComfyUnavailable', 'test: no GPU here');
    };
    const r = await post('/sdapi/v1/img2img', { prompt: 'p', model: 'imagegen-flux-schnell', init_images: [image] });
    expect(r.status).toBe(503);
    expect(front.starts.length).toBe(before + 1);
  });
});

describe('Idempotency-Key fingerprint (red-team: reordered keys were a 409)', () => {
  it('the same body with its keys in another order has the same fingerprint', () => {
    const a = { prompt: 'p', seed: 1, override_settings: { a: 1, b: [1, { y: 2, x: 1 }] } };
    const b = { override_settings: { b: [1, { x: 1, y: 2 }], a: 1 }, seed: 1, prompt: 'p' };
    expect(requestFingerprint('txt2img', a)).toBe(requestFingerprint('txt2img', b));
    expect(requestFingerprint('txt2img', a)).not.toBe(requestFingerprint('txt2img', { ...a, seed: 2 }));
    // Array order is meaning, not formatting.
    expect(canonicalJson([1, 2])).not.toBe(canonicalJson([2, 1]));
  });
});
