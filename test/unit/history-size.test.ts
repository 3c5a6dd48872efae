/**
 * Red-team H6: a render over Temporal's 2 MB payload limit (761 LoRA tags × n_iter 16 in a 16 KB body) failed
 * its workflow task forever, holding an admission slot (api + worker), or answered 500 (start). Now the
 * submission service refuses it after building its graphs, before anything is stored or started: a 413 naming
 * the field to change.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { MAX_HISTORY_PAYLOAD_BYTES, oversizedRender, payloadBytes } from '../../src/contracts/history-size.ts';
import { buildRender } from '../../src/renders/build-render.ts';
import { startTestFront, type TestFront } from '../support/front.ts';

const fronts: TestFront[] = [];
afterEach(async () => {
  await Promise.all(fronts.splice(0).map((f) => f.close()));
});
const json = { 'content-type': 'application/json' };
const LORAS = Array.from({ length: 761 }, (_, i) => `l${i}.safetensors`);
const loraPrompt = (n: number): string => `a cat ${Array.from({ length: n }, (_, i) => `<lora:l${i}:0.5>`).join('')}`;

describe('renders over the workflow payload limit', () => {
  it('the 761 LoRA tags × n_iter 16 reproduction is a 413 naming n_iter in the A1111 envelope; nothing starts', async () => {
    const f = await startTestFront({}, { loras: LORAS });
    fronts.push(f);
    const body = JSON.stringify({ prompt: loraPrompt(761), n_iter: 16, width: 64, height: 64, steps: 1 });
    expect(body.length).toBeLessThan(17_000);
    const res = await f.app.inject({ method: 'POST', url: '/sdapi/v1/txt2img', headers: json, payload: body });
    expect(res.statusCode, res.body).toBe(413);
    expect(res.json()).toMatchObject({ field: 'n_iter', detail: expect.stringMatching(/too large/) });
    expect(f.starts).toHaveLength(0);
  });

  it('the same prompt as a single image fits, and starts; its input is measured as the payload converter serialises it', async () => {
    const f = await startTestFront({}, { loras: LORAS });
    fronts.push(f);
    const res = await f.app.inject({
      method: 'POST',
      url: '/sdapi/v1/txt2img',
      headers: json,
      payload: JSON.stringify({ prompt: loraPrompt(761), width: 64, height: 64, steps: 1 }),
    });
    expect(res.statusCode).toBe(503); // the test front has no GPU; what matters is that it started
    expect(f.starts).toHaveLength(1);
    const request = f.starts[0]!.request;
    const built = buildRender({ STALL_TIMEOUT_MS: undefined, HEARTBEAT_TIMEOUT_MS: 30_000 }, request, 'render-h6b');
    expect(payloadBytes(built)).toBeLessThan(MAX_HISTORY_PAYLOAD_BYTES);
    expect(oversizedRender(request, built)).toBeUndefined();
    expect(
      oversizedRender(
        { ...request, nIter: 16 },
        buildRender({ STALL_TIMEOUT_MS: undefined, HEARTBEAT_TIMEOUT_MS: 30_000 }, { ...request, nIter: 16 }, 'render-h6c'),
      ),
    ).toMatchObject({ field: 'n_iter' });
  });
});
