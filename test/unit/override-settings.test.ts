/**
 * Red-team M1 and L1: `override_settings` kept with `override_settings_restore_afterwards: false` goes through
 * the options check (bounded, typed), and override keys named like Object.prototype members are plain keys.
 */
import { readFileSync, existsSync } from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { startTestFront, type TestFront } from '../support/front.ts';

const fronts: TestFront[] = [];
afterEach(async () => {
  await Promise.all(fronts.splice(0).map((f) => f.close()));
});
async function front(): Promise<TestFront> {
  const f = await startTestFront();
  fronts.push(f);
  return f;
}
const json = { 'content-type': 'application/json' };
const txt2img = (f: TestFront, extra: Record<string, unknown>) =>
  f.app.inject({
    method: 'POST',
    url: '/sdapi/v1/txt2img',
    headers: json,
    payload: JSON.stringify({ prompt: 'p', width: 64, height: 64, steps: 1, ...extra }),
  });
const storedOptions = (f: TestFront): string => {
  const file = path.join(f.dataDir, 'options.json');
  return existsSync(file) ? readFileSync(file, 'utf8') : '';
};

describe('override_settings kept as settings (restore_afterwards false)', () => {
  it('a poisoned jpeg_quality is a 422 naming it; nothing is stored and later renders still start', async () => {
    const f = await front();
    for (const jpeg_quality of [{ toString: 1, valueOf: 1 }, 'x'.repeat(1000), 0, 101, 2.5]) {
      const res = await txt2img(f, { override_settings: { samples_format: 'jpg', jpeg_quality }, override_settings_restore_afterwards: false });
      expect(res.statusCode, JSON.stringify(jpeg_quality).slice(0, 40)).toBe(422);
      expect(res.json().field).toBe('override_settings.jpeg_quality');
    }
    expect(storedOptions(f)).toBe('');
    expect(f.starts).toHaveLength(0);
    // The next render is not affected (the default test outcome is a 503 from "no GPU", never a 500).
    const next = await txt2img(f, { override_settings: { samples_format: 'jpg' } });
    expect(next.statusCode).toBe(503);
    expect(f.starts).toHaveLength(1);
    expect(f.starts[0]!.request.output).toMatchObject({ format: 'jpeg', quality: 80 });
  });

  it('only known options with valid values are stored, however much junk comes with them', async () => {
    const f = await front();
    const junk: Record<string, string> = {};
    for (let i = 0; i < 2_000; i++) junk[`junk_${i}`] = 'x'.repeat(500);
    const res = await txt2img(f, { override_settings: { ...junk, samples_format: 'webp', jpeg_quality: 55 }, override_settings_restore_afterwards: false });
    expect(res.statusCode).toBe(503);
    expect(storedOptions(f).length).toBeLessThan(1_000);
    const got = (await f.app.inject({ url: '/sdapi/v1/options' })).json();
    expect(got).not.toHaveProperty('junk_0');
    expect(got).toMatchObject({ samples_format: 'webp', jpeg_quality: 55 });
    // Stored options reach later renders.
    await txt2img(f, {});
    expect(f.starts.at(-1)!.request.output).toMatchObject({ format: 'webp', quality: 55 });
  });

  it('POST /sdapi/v1/options checks jpeg_quality the same way', async () => {
    const f = await front();
    const bad = await f.app.inject({ method: 'POST', url: '/sdapi/v1/options', headers: json, payload: JSON.stringify({ jpeg_quality: { toString: 1 } }) });
    expect(bad.statusCode).toBe(422);
    expect(bad.json().field).toBe('jpeg_quality');
  });
});

describe('override_settings keys named like Object.prototype members (L1)', () => {
  it('toString, constructor, valueOf, hasOwnProperty are plain keys: no 500', async () => {
    const f = await front();
    const payload =
      '{"prompt":"p","width":64,"height":64,"steps":1,"override_settings":{"toString":1,"constructor":"x","valueOf":{},"hasOwnProperty":2,"isPrototypeOf":[],"samples_format":{"toString":1}}';
    const used = await f.app.inject({ method: 'POST', url: '/sdapi/v1/txt2img', headers: json, payload: `${payload}}` });
    expect(used.statusCode, used.body).toBe(503);
    // Kept as settings, the object-valued samples_format is refused like POST /sdapi/v1/options refuses it.
    const kept = await f.app.inject({
      method: 'POST',
      url: '/sdapi/v1/txt2img',
      headers: json,
      payload: `${payload},"override_settings_restore_afterwards":false}`,
    });
    expect(kept.statusCode, kept.body).toBe(422);
    expect(kept.json().field).toBe('override_settings.samples_format');
    expect(f.starts).toHaveLength(1);
    // The object-valued samples_format is ignored for the render, never converted.
    expect(f.starts[0]!.request.output).toBeUndefined();
    expect(storedOptions(f)).toBe('');
  });

  it('__proto__ is refused as bad JSON (400), never a 500', async () => {
    const f = await front();
    const payload = '{"prompt":"p","override_settings":{"__proto__":{"jpeg_quality":{"toString":1}}},"override_settings_restore_afterwards":false}';
    const res = await f.app.inject({ method: 'POST', url: '/sdapi/v1/txt2img', headers: json, payload });
    expect(res.statusCode).toBe(400);
    expect(f.starts).toHaveLength(0);
  });
});
