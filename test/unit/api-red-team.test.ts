/**
 * Red-team LOW/INFO findings on the front, each checked in-process (no Temporal: test/support/front.ts):
 * strict auth, /health without URLs, framework errors in A1111's envelope, 500s that name no internals,
 * bounded and typed options, admission control, refusals that store nothing, body-read timeouts,
 * CANCEL_ON_DISCONNECT with several clients, `outputs/0x0`, unreadable `since`.
 */
import { readdirSync, writeFileSync, existsSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { authorized } from '../../src/api/server.ts';
import type { RenderResult } from '../../src/contracts/render.ts';
import { renderIdForKey } from '../../src/renders/render-ids.ts';
import { JPEG_1X1 } from '../golden/helpers.ts';
import { discMask, makePng, redSquare } from '../support/fixtures.ts';
import { startTestFront, type TestFront, type TestFrontOptions } from '../support/front.ts';
import { expectImageRender } from '../../src/contracts/render.ts';

const fronts: TestFront[] = [];
async function front(env: Record<string, string> = {}, opts: TestFrontOptions = {}): Promise<TestFront> {
  const f = await startTestFront(env, opts);
  fronts.push(f);
  return f;
}
afterEach(async () => {
  await Promise.all(fronts.splice(0).map((f) => f.close()));
});

const json = { 'content-type': 'application/json' };
const basic = (s: string): string => `Basic ${Buffer.from(s).toString('base64')}`;
const blobCount = (f: TestFront): number =>
  existsSync(f.blobDir) ? readdirSync(f.blobDir, { recursive: true }).filter((n) => /[0-9a-f]{64}$/.test(String(n))).length : 0;
const body = (extra: Record<string, unknown> = {}) => JSON.stringify({ prompt: 'p', model: 'imagegen-flux-schnell', ...extra });

describe('strict Authorization parsing', () => {
  it('refuses trailing junk after a Bearer token and garbage after Basic credentials', () => {
    expect(authorized('Bearer s3cret', 's3cret')).toBe(true);
    expect(authorized(basic('u:s3cret'), 's3cret')).toBe(true);
    expect(authorized('Bearer s3cret junk', 's3cret')).toBe(false);
    expect(authorized('Bearer  s3cret', 's3cret')).toBe(true);
    expect(authorized(`${basic('u:s3cret')}!!junk`, 's3cret')).toBe(false);
    expect(authorized(`${basic('u:s3cret')} junk`, 's3cret')).toBe(false);
    expect(authorized(`${basic('u:s3cret').replace(/={1,2}$/, '')}`, 's3cret')).toBe(false);
  });
});

describe('/health', () => {
  it('does not show backend URLs', async () => {
    const f = await front();
    const res = await f.app.inject({ url: '/health' });
    expect(res.body).not.toMatch(/secret-gpu-box|8188|http:/);
    expect(res.json().checks.map((c: { name: string }) => c.name)).toContain('comfyui:comfyui-0');
  });
});

describe("framework errors in A1111's envelope", () => {
  it('an unknown route answers exactly what A1111 (FastAPI) answers', async () => {
    const f = await front();
    const res = await f.app.inject({ url: '/nope' });
    expect(res.statusCode).toBe(404);
    expect(res.headers['content-type']).toMatch(/application\/json/);
    expect(res.json()).toEqual({ detail: 'Not Found' });
  });

  it('over-long parameters and bad URLs', async () => {
    const f = await front();
    const cases = [
      { url: `/renders/${'a'.repeat(300)}`, status: 414 },
      { url: '/renders/%E0%A4%A', status: 400 },
    ];
    for (const c of cases) {
      const res = await f.app.inject({ url: c.url });
      expect(res.statusCode, c.url).toBe(c.status);
      expect(res.headers['content-type']).toMatch(/application\/json/);
      const b = res.json();
      expect(b, c.url).toMatchObject({ error: 'HTTPException', body: '' });
      expect(typeof b.detail).toBe('string');
      expect(b).not.toHaveProperty('statusCode');
    }
  });

  it('a 500 names no internal error', async () => {
    const f = await front();
    f.outcome = async () => {
      throw new TypeError('Cannot read properties of undefined (reading "secretInternalField") at /srv/app/src/x.ts');
    };
    const res = await f.app.inject({ method: 'POST', url: '/sdapi/v1/txt2img', headers: json, payload: body() });
    expect(res.statusCode).toBe(500);
    expect(res.body).not.toMatch(/secretInternalField|TypeError|\/srv\/app/);
    expect(res.json().detail).toMatch(/internal error/);
  });

  it('`outputs/0x0` is a 404, not output 0', async () => {
    const f = await front();
    for (const n of ['0x0', '1e0', '-1', '+0']) {
      const res = await f.app.inject({ url: `/renders/render-x/outputs/${encodeURIComponent(n)}` });
      expect(res.statusCode, n).toBe(404);
      expect(res.json().field).toBe('n');
    }
  });

  it('an unreadable `since` is a 400', async () => {
    const f = await front();
    const res = await f.app.inject({ url: '/renders?since=9999999999999999h' });
    expect(res.statusCode).toBe(400);
    expect(res.json().field).toBe('since');
  });
});

describe('/sdapi/v1/options: bounded and typed', () => {
  it('a wrong type for a known key is a 422 naming it', async () => {
    const f = await front();
    for (const payload of [{ sd_model_checkpoint: { toString: 1 } }, { CLIP_stop_at_last_layers: 'two' }, { send_seed: 'x'.repeat(10) }]) {
      const res = await f.app.inject({ method: 'POST', url: '/sdapi/v1/options', headers: json, payload: JSON.stringify(payload) });
      expect(res.statusCode, JSON.stringify(payload)).toBe(422);
      expect(res.json().field).toBe(Object.keys(payload)[0]);
    }
  });

  it('unknown keys are ignored (as A1111 does): neither stored nor echoed, however many', async () => {
    const f = await front();
    const junk: Record<string, string> = {};
    for (let i = 0; i < 2_000; i++) junk[`junk_${i}`] = 'x'.repeat(500);
    const res = await f.app.inject({
      method: 'POST',
      url: '/sdapi/v1/options',
      headers: json,
      payload: JSON.stringify({ ...junk, CLIP_stop_at_last_layers: 2, sd_model_checkpoint: 'imagegen-flux-dev' }),
    });
    expect(res.statusCode).toBe(200);
    const got = (await f.app.inject({ url: '/sdapi/v1/options' })).json();
    expect(got).not.toHaveProperty('junk_0');
    expect(got.CLIP_stop_at_last_layers).toBe(2);
    expect(got.sd_model_checkpoint).toBe('FLUX.1-dev');
    const stored = JSON.stringify(JSON.parse(await import('node:fs').then((fs) => fs.readFileSync(path.join(f.dataDir, 'options.json'), 'utf8'))));
    expect(stored.length).toBeLessThan(1_000);
  });

  it('junk an older version stored is dropped at start', async () => {
    const f = await front();
    writeFileSync(path.join(f.dataDir, 'options.json'), JSON.stringify({ junk: 'x'.repeat(10_000), sd_vae: 'ae', CLIP_stop_at_last_layers: { bad: 1 } }));
    const { OptionsStore } = await import('../../src/api/options-store.ts');
    const store = new OptionsStore(path.join(f.dataDir, 'options.json'), {});
    expect(store.all()).toEqual({ sd_vae: 'ae' });
  });
});

describe('admission control (MAX_WAITING_RENDERS)', () => {
  it("past the bound: 503 with Retry-After in A1111's envelope, nothing stored or started", async () => {
    let waiting = 2;
    const f = await front({ MAX_WAITING_RENDERS: '2' }, { waitingRenders: async () => waiting });
    const res = await f.app.inject({
      method: 'POST',
      url: '/sdapi/v1/img2img',
      headers: json,
      payload: body({ init_images: [redSquare(64).toString('base64')] }),
    });
    expect(res.statusCode).toBe(503);
    expect(Number(res.headers['retry-after'])).toBeGreaterThan(0);
    expect(res.json()).toMatchObject({ error: 'HTTPException', body: '', limit: 2 });
    expect(res.json().detail).toMatch(/MAX_WAITING_RENDERS/);
    expect(f.starts).toHaveLength(0);
    expect(blobCount(f)).toBe(0);
    waiting = 0;
    await new Promise((r) => setTimeout(r, 1_100)); // the count is cached for a second
    const ok = await f.app.inject({ method: 'POST', url: '/sdapi/v1/txt2img', headers: json, payload: body() });
    expect(ok.statusCode).toBe(503); // the stand-in render fails with 503 …
    expect(ok.json().detail).not.toMatch(/MAX_WAITING_RENDERS/); // … but it was admitted
    expect(f.starts).toHaveLength(1);
  });

  it('an Idempotency-Key retry that attaches to its render is admitted even when full', async () => {
    const f = await front({ MAX_WAITING_RENDERS: '1' }, { waitingRenders: async () => 5, keyState: () => 'attach' });
    const res = await f.app.inject({ method: 'POST', url: '/sdapi/v1/txt2img', headers: { ...json, 'idempotency-key': 'k1' }, payload: body() });
    expect(res.json().detail).not.toMatch(/MAX_WAITING_RENDERS/);
    expect(f.starts).toHaveLength(1);
  });
});

describe('a request refused with 409 stores nothing (red-team: input images stored anyway)', () => {
  it('no blob is written', async () => {
    const f = await front({}, { keyState: () => 'conflict' });
    const res = await f.app.inject({
      method: 'POST',
      url: '/sdapi/v1/img2img',
      headers: { ...json, 'idempotency-key': 'used' },
      payload: body({ init_images: [redSquare(64).toString('base64')] }),
    });
    expect(res.statusCode).toBe(409);
    expect(res.json().field).toBe('Idempotency-Key');
    expect(blobCount(f)).toBe(0);
    expect(f.starts).toHaveLength(0);
  });
});

describe('a mask of another size than the init image', () => {
  it('PNG masks are resized to the init image (A1111 resizes the mask with the image)', async () => {
    const f = await front();
    const res = await f.app.inject({
      method: 'POST',
      url: '/sdapi/v1/img2img',
      headers: json,
      payload: body({ init_images: [redSquare(64).toString('base64')], mask: discMask(32).toString('base64') }),
    });
    expect(res.statusCode).toBe(503); // the stand-in render
    const mask = expectImageRender(f.starts[0]!.request).mask;
    expect(mask).toMatchObject({ width: 64, height: 64 });
  });

  it('a JPEG mask of another size is refused with a 400 naming mask', async () => {
    const f = await front();
    const res = await f.app.inject({
      method: 'POST',
      url: '/sdapi/v1/img2img',
      headers: json,
      payload: body({ init_images: [makePng(64, 64, () => [1, 2, 3, 255]).toString('base64')], mask: JPEG_1X1.toString('base64') }),
    });
    expect(res.statusCode).toBe(400);
    expect(res.json().field).toBe('mask');
    expect(f.starts).toHaveLength(0);
  });
});

describe('over a real socket', () => {
  async function listen(f: TestFront): Promise<number> {
    await f.app.listen({ host: '127.0.0.1', port: 0 });
    return (f.app.server.address() as AddressInfo).port;
  }

  const inFlightClients = (f: TestFront, id: string): number => f.inFlight().clients(id);

  it('a body trickled byte by byte is cut off with 408 (REQUEST_TIMEOUT_MS)', async () => {
    const f = await front({ REQUEST_TIMEOUT_MS: '500' });
    const port = await listen(f);
    const sock = net.connect(port, '127.0.0.1');
    sock.write(`POST /sdapi/v1/txt2img HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{`);
    const trickle = setInterval(() => sock.write(' '), 200);
    const answer = await new Promise<string>((resolve) => {
      let got = '';
      sock.on('data', (d) => (got += String(d)));
      sock.on('close', () => resolve(got));
      sock.on('error', () => resolve(got));
    });
    clearInterval(trickle);
    // The event (the 408 and the close), not a time, ends the wait.
    expect(answer).toMatch(/^HTTP\/1\.1 408/);
    expect(f.starts).toHaveLength(0);
  }, 30_000);

  it('CANCEL_ON_DISCONNECT cancels only when the last waiting client leaves', async () => {
    const f = await front({ CANCEL_ON_DISCONNECT: 'true' }, { keyState: () => 'attach' });
    let finish!: (r: RenderResult) => void;
    f.outcome = () => new Promise<RenderResult>((resolve) => (finish = resolve));
    const port = await listen(f);
    const clients = [new AbortController(), new AbortController()];
    const requests = clients.map((c) =>
      fetch(`http://127.0.0.1:${port}/sdapi/v1/txt2img`, {
        method: 'POST',
        headers: { ...json, 'idempotency-key': 'shared' },
        body: body(),
        signal: c.signal,
      }).catch(() => undefined),
    );
    const until = async (cond: () => boolean): Promise<void> => {
      while (!cond()) {
        await new Promise((r) => setTimeout(r, 20));
      }
    };
    await until(() => f.starts.length === 2);
    clients[0]!.abort();
    await requests[0];
    // The front has seen the first client go once the render has one waiting client left.
    await until(() => inFlightClients(f, renderIdForKey('shared')) === 1);
    expect(f.cancelled).toEqual([]);
    clients[1]!.abort();
    await requests[1];
    await until(() => f.cancelled.length > 0);
    expect(f.cancelled).toEqual([renderIdForKey('shared')]);
    finish({ renderId: renderIdForKey('shared'), outputs: [], seeds: [], request: f.starts[0]!.request, backend: 'comfyui-0', promptIds: [], timings: [] });
  }, 30_000);
});
