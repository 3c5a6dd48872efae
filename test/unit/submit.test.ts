/**
 * The submission service (renders/submit.ts), the one way every entry point starts a render: the
 * Idempotency-Key fingerprint covers the route (red-team: an img2img got an earlier txt2img's images), and a
 * refusal (key conflict, full queue, unbuildable request) leaves nothing stored and nothing started.
 */
import { existsSync, readdirSync } from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import type { BuiltRender } from '../../src/contracts/activities.ts';
import type { BlobStore } from '../../src/blobs/store.ts';
import { RequestError } from '../../src/errors/request-error.ts';
import type { DecodedImage } from '../../src/images/decode.ts';
import type { RenderRequest } from '../../src/contracts/render.ts';
import { Admission, AdmissionRefusedError } from '../../src/renders/admission.ts';
import { requestFingerprint } from '../../src/renders/render-ids.ts';
import { IdempotencyConflictError, type RenderService, type StartOptions, type StartedRender } from '../../src/renders/render-service.ts';
import { RenderSubmitter } from '../../src/renders/submit.ts';
import { redSquare } from '../support/fixtures.ts';
import { startTestFront, type TestFront } from '../support/front.ts';

const fronts: TestFront[] = [];
afterEach(async () => {
  await Promise.all(fronts.splice(0).map((f) => f.close()));
});
async function front(env: Record<string, string> = {}): Promise<TestFront> {
  const f = await startTestFront(env);
  fronts.push(f);
  return f;
}
const json = { 'content-type': 'application/json' };
const blobCount = (f: TestFront): number =>
  existsSync(f.blobDir) ? readdirSync(f.blobDir, { recursive: true }).filter((n) => /[0-9a-f]{64}$/.test(String(n))).length : 0;
const a1111 = (extra: Record<string, unknown> = {}) => JSON.stringify({ prompt: 'p', seed: 7, model: 'imagegen-flux-schnell', ...extra });

describe('Idempotency-Key across routes (L6)', () => {
  it('the fingerprint covers the route: the same body on two routes is two requests', () => {
    const body = { prompt: 'p', seed: 7 };
    expect(requestFingerprint('sdapi.txt2img', body)).toBe(requestFingerprint('sdapi.txt2img', { seed: 7, prompt: 'p' }));
    expect(requestFingerprint('sdapi.txt2img', body)).not.toBe(requestFingerprint('sdapi.img2img', body));
  });

  it("an img2img under a key a txt2img used is a 409 naming the header, not the txt2img's images; nothing stored", async () => {
    const f = await front();
    const headers = { ...json, 'idempotency-key': 'shared-key' };
    const txt = await f.app.inject({ method: 'POST', url: '/sdapi/v1/txt2img', headers, payload: a1111() });
    expect(txt.headers['x-render-id']).toMatch(/^render-key-/);
    expect(f.starts).toHaveLength(1);
    const img = await f.app.inject({ method: 'POST', url: '/sdapi/v1/img2img', headers, payload: a1111({ init_images: [redSquare(64).toString('base64')] }) });
    expect(img.statusCode).toBe(409);
    expect(img.json()).toMatchObject({ error: 'HTTPException', field: 'Idempotency-Key' });
    expect(img.json().detail).toMatch(/another route or body/);
    expect(f.starts).toHaveLength(1);
    expect(blobCount(f)).toBe(0);
  });

  it('the same request on the same route under the key attaches to its render', async () => {
    const f = await front();
    const headers = { ...json, 'idempotency-key': 'retry-key' };
    const first = await f.app.inject({ method: 'POST', url: '/sdapi/v1/txt2img', headers, payload: a1111() });
    const retry = await f.app.inject({ method: 'POST', url: '/sdapi/v1/txt2img', headers, payload: a1111() });
    expect(retry.statusCode).not.toBe(409);
    expect(retry.headers['x-render-id']).toBe(first.headers['x-render-id']);
    expect(f.starts.map((s) => s.opts.renderId)).toEqual([first.headers['x-render-id'], first.headers['x-render-id']]);
  });

  it('extras under a key an img2img used conflict too (each A1111 route has its own name)', async () => {
    const f = await front();
    const headers = { ...json, 'idempotency-key': 'k-extras' };
    await f.app.inject({ method: 'POST', url: '/sdapi/v1/img2img', headers, payload: a1111({ init_images: [redSquare(64).toString('base64')] }) });
    const blobs = blobCount(f);
    const extras = await f.app.inject({
      method: 'POST',
      url: '/sdapi/v1/extra-single-image',
      headers,
      payload: JSON.stringify({ image: redSquare(32).toString('base64'), upscaling_resize: 2 }),
    });
    expect(extras.statusCode).toBe(409);
    expect(blobCount(f)).toBe(blobs);
    expect(f.starts).toHaveLength(1);
  });
});

/** The submitter alone, with recording stand-ins for Temporal, the blob store and the graph build. */
function submitterWith(opts: { keyState?: 'attach' | 'new' | 'conflict'; waiting?: number; build?: () => BuiltRender }) {
  const log: string[] = [];
  const renders = {
    checkKey: async (renderId: string) => {
      log.push('checkKey');
      if (opts.keyState === 'conflict') throw new IdempotencyConflictError(renderId);
      return opts.keyState ?? 'new';
    },
    start: async (_request: RenderRequest, o: StartOptions): Promise<StartedRender> => {
      log.push(`start:${o.taskQueue ?? 'default'}:${o.priority ?? '-'}`);
      return { renderId: o.renderId, handle: {} as StartedRender['handle'], attached: opts.keyState === 'attach' };
    },
  } as unknown as RenderService;
  const blobs = { put: async () => void log.push('put') } as unknown as BlobStore;
  const admission = new Admission({ limit: 1, retryAfterSeconds: 1, count: async () => opts.waiting ?? 0 });
  const built = {} as BuiltRender;
  const submitter = new RenderSubmitter({
    renders,
    blobs,
    admission,
    build: () => {
      log.push('build');
      return opts.build ? opts.build() : built;
    },
  });
  return { submitter, log };
}
const request = { model: 'imagegen-flux-schnell', prompt: 'p' } as RenderRequest;
const images = [{ bytes: Buffer.from('x'), ref: { sha256: 'a'.repeat(64), mime: 'image/png', width: 1, height: 1, size: 1 } }] as DecodedImage[];

describe('RenderSubmitter', () => {
  it('in order: key check, graph build, admission, images, start (with priority and queue)', async () => {
    const { submitter, log } = submitterWith({});
    const started = await submitter.submit({ route: 'r', request, images, idempotencyKey: 'k', body: {}, priority: 1, taskQueue: 'q2' });
    expect(log).toEqual(['checkKey', 'build', 'put', 'start:q2:1']);
    expect(started.renderId).toMatch(/^render-key-/);
  });

  it('without a key: no key check, a fresh id', async () => {
    const { submitter, log } = submitterWith({});
    const started = await submitter.submit({ route: 'r', request });
    expect(log).toEqual(['build', 'start:default:-']);
    expect(started.renderId).toMatch(/^render-[0-9a-z]{26}$/);
  });

  it('a conflicting key: nothing built, stored or started', async () => {
    const { submitter, log } = submitterWith({ keyState: 'conflict' });
    await expect(submitter.submit({ route: 'r', request, images, idempotencyKey: 'k' })).rejects.toMatchObject({ status: 409, field: 'Idempotency-Key' });
    expect(log).toEqual(['checkKey']);
  });

  it('a full queue: 503 before anything is stored; an attaching key is let through', async () => {
    const full = submitterWith({ waiting: 5 });
    await expect(full.submitter.submit({ route: 'r', request, images })).rejects.toBeInstanceOf(AdmissionRefusedError);
    expect(full.log).toEqual(['build']);
    const attach = submitterWith({ waiting: 5, keyState: 'attach' });
    expect((await attach.submitter.submit({ route: 'r', request, images, idempotencyKey: 'k' })).attached).toBe(true);
  });

  it('a request no graph can be built for is a 422 on `model`, with nothing stored or started', async () => {
    const { submitter, log } = submitterWith({
      build: () => {
        throw new Error('no sampler for this kind');
      },
    });
    const err = await submitter.submit({ route: 'r', request, images }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(RequestError);
    expect(err).toMatchObject({ status: 422, field: 'model' });
    expect((err as Error).message).toMatch(/no sampler for this kind/);
    expect(log).toEqual(['build']);
  });
});
