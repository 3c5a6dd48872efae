/**
 * Red-team H6: a render over Temporal's 2 MB payload limit (761 LoRA tags × n_iter 16 in a 16 KB body) failed
 * its workflow task forever, holding an admission slot (api + worker), or answered 500 (start). Now the front
 * refuses it before starting (413 naming the field), and a worker that builds it fails the render at once.
 */
import { ApplicationFailure } from '@temporalio/common';
import { afterEach, describe, expect, it } from 'vitest';
import type { Client } from '@temporalio/client';
import { buildRender } from '../../src/activities/build-graph.ts';
import { RequestError } from '../../src/api/a1111/errors.ts';
import { RenderService } from '../../src/api/render-service.ts';
import { MAX_HISTORY_PAYLOAD_BYTES, oversizedRender, payloadBytes } from '../../src/render/history-size.ts';
import { startTestFront, type TestFront } from '../support/front.ts';

const fronts: TestFront[] = [];
afterEach(async () => {
  await Promise.all(fronts.splice(0).map((f) => f.close()));
});
const json = { 'content-type': 'application/json' };
const LORAS = Array.from({ length: 761 }, (_, i) => `l${i}.safetensors`);
const loraPrompt = (n: number): string => `a cat ${Array.from({ length: n }, (_, i) => `<lora:l${i}:0.5>`).join('')}`;

describe('renders over the workflow payload limit', () => {
  it('the 761 LoRA tags × n_iter 16 reproduction is a 413 naming n_iter from the submission service; nothing starts', async () => {
    const f = await startTestFront({}, { loras: LORAS });
    fronts.push(f);
    const body = JSON.stringify({ prompt: loraPrompt(761), n_iter: 16, width: 64, height: 64, steps: 1 });
    expect(body.length).toBeLessThan(17_000);
    // The test front's stand-in service records the normalised request; the real service must refuse it.
    await f.app.inject({ method: 'POST', url: '/sdapi/v1/txt2img', headers: json, payload: body });
    const request = f.starts[0]!.request;
    expect(request.nIter).toBe(16);
    const started: unknown[] = [];
    const client = { workflow: { start: async (...a: unknown[]) => started.push(a) } } as unknown as Client;
    for (const service of [new RenderService(client, 'q'), new RenderService(client, 'q', undefined, (r, id) => buildRender({ STALL_TIMEOUT_MS: undefined, HEARTBEAT_TIMEOUT_MS: 30_000 }, r, id))]) {
      const err = await service.start(request).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(RequestError);
      expect((err as RequestError).status).toBe(413);
      expect((err as RequestError).field).toBe('n_iter');
      expect((err as RequestError).message).toMatch(/too large/);
    }
    expect(started).toHaveLength(0);
    // The same prompt as a single image fits, and starts.
    await new RenderService(client, 'q').start({ ...request, nIter: 1 });
    expect(started).toHaveLength(1);
  });

  it('a worker that builds such a render fails it (non-retryable), never records it', async () => {
    const f = await startTestFront({}, { loras: LORAS });
    fronts.push(f);
    const ok = await f.app.inject({ method: 'POST', url: '/sdapi/v1/txt2img', headers: json, payload: JSON.stringify({ prompt: loraPrompt(761), width: 64, height: 64, steps: 1 }) });
    expect(ok.statusCode).toBe(503);
    const request = { ...f.starts[0]!.request, nIter: 16 };
    let failure: unknown;
    try {
      buildRender({ STALL_TIMEOUT_MS: undefined, HEARTBEAT_TIMEOUT_MS: 30_000 }, request, 'render-h6');
    } catch (err) {
      failure = err;
    }
    expect(failure).toBeInstanceOf(ApplicationFailure);
    expect((failure as ApplicationFailure).nonRetryable).toBe(true);
    expect((failure as ApplicationFailure).type).toBe('InvalidRender');
    // What fits is measured as the payload converter serialises it.
    const built = buildRender({ STALL_TIMEOUT_MS: undefined, HEARTBEAT_TIMEOUT_MS: 30_000 }, f.starts[0]!.request, 'render-h6b');
    expect(payloadBytes(built)).toBeLessThan(MAX_HISTORY_PAYLOAD_BYTES);
    expect(oversizedRender(f.starts[0]!.request, built)).toBeUndefined();
  });
});
