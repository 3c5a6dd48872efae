/**
 * ComfyUI's answer to `POST /prompt` is the authority: for every answer a real ComfyUI 0.33.0 gave in the
 * recordings (test/fixtures/real-comfyui/), replayed byte for byte by a stub, the client accepts what it
 * accepted and turns every refusal, and every partial acceptance, into a non-retryable ComfyValidationError
 * that carries ComfyUI's own error type and `node_errors` unchanged.
 */
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ComfyClient } from '../../src/comfyui/client.ts';
import { ComfyValidationError } from '../../src/comfyui/errors.ts';
import type { ComfyGraph } from '../../src/comfyui/graph.ts';
import { ComfyStub } from './comfyui-stub.ts';

interface Step {
  name: string;
  method?: string;
  path?: string;
  status: number | string;
  request_json?: { prompt?: unknown } | null;
  json?: { prompt_id?: string; number?: number; error?: { type: string } | string; node_errors?: Record<string, unknown> } | null;
}

const steps = (file: string): Array<[string, Step]> =>
  (JSON.parse(readFileSync(new URL(`../fixtures/real-comfyui/${file}`, import.meta.url), 'utf8')) as { steps: Step[] }).steps
    .filter((s) => (s.method === undefined || s.method === 'POST') && (s.path === undefined || /^\/(api\/)?prompt$/.test(s.path)))
    .filter((s) => s.request_json?.prompt !== undefined && s.json)
    .map((s) => [s.name, s]);

const recorded = [...steps('capture-real.json'), ...steps('verdicts-model-files.json')];

let stub: ComfyStub;
let client: ComfyClient;
beforeAll(async () => {
  stub = await new ComfyStub().listen();
  client = new ComfyClient({ baseUrl: stub.url, timeouts: { requestMs: 5000 } });
});
afterAll(async () => {
  await client.close();
  await stub.stop();
});

describe('the client takes the real server recorded verdicts as they are', () => {
  it('covers acceptances, refusals and partial acceptances', () => {
    const kinds = recorded.map(([, s]) => (Number(s.status) === 400 ? 'refused' : Object.keys(s.json?.node_errors ?? {}).length > 0 ? 'partial' : 'accepted'));
    expect(new Set(kinds)).toEqual(new Set(['refused', 'partial', 'accepted']));
  });

  it.each(recorded)('%s', async (_name, step) => {
    const answer = step.json!;
    stub.overrides.set('POST /prompt', () => ({ status: Number(step.status), json: answer }));
    const result = client.submitPrompt({ graph: step.request_json!.prompt as ComfyGraph, cancelPartial: false });
    const nodeErrors = answer.node_errors ?? {};
    if (Number(step.status) === 200 && Object.keys(nodeErrors).length === 0) {
      await expect(result).resolves.toEqual({ promptId: answer.prompt_id, number: answer.number, nodeErrors: {} });
      return;
    }
    const err = (await result.catch((e: unknown) => e)) as ComfyValidationError;
    expect(err).toBeInstanceOf(ComfyValidationError);
    expect(err.retryable).toBe(false);
    expect(err.status).toBe(Number(step.status));
    expect(err.nodeErrors).toEqual(nodeErrors);
    if (Number(step.status) === 400) expect(err.errorType).toBe(typeof answer.error === 'object' ? answer.error.type : 'error');
    else expect(err.queuedPromptId).toBe(answer.prompt_id);
  });
});
