/**
 * Issue 27 M3: clients in their own rooms. Named keys with roles: a client key lists, reads, cancels and
 * replays only the renders it started (another key's render is "not found"), an operator key all of them;
 * each render records its key's name as owner, and an Idempotency-Key is the key's own. Through the HTTP
 * front, with a stand-in for Temporal's client that answers from the renders this test made.
 */
import { TypedSearchAttributes } from '@temporalio/common';
import type { Client } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadApiKeys } from '../../src/auth/keys.ts';
import { loadConfig } from '../../src/config/config.ts';
import { RENDER_OWNER } from '../../src/contracts/search-attributes.ts';
import { makePng } from '../support/fixtures.ts';
import { startTestFront, type TestFront } from '../support/front.ts';

const KEYS = [
  { name: 'alice', token: 'alice-token-0123456789', role: 'client' },
  { name: 'bob', token: 'bob-token-0123456789ab', role: 'client' },
  { name: 'ops', token: 'ops-token-0123456789ab', role: 'operator' },
];
const auth = (name: string) => ({ authorization: `Bearer ${KEYS.find((k) => k.name === name)!.token}` });

/** Renders as Temporal would describe them: id → owner (running). */
const renders = new Map<string, { owner?: string }>();
const cancelled: string[] = [];
const queries: string[] = [];

const client = {
  workflow: {
    getHandle: (id: string) => ({
      describe: async () => {
        const r = renders.get(id);
        if (!r) throw Object.assign(new Error('not found'), { name: 'WorkflowNotFoundError' });
        return {
          type: 'render',
          workflowId: id,
          memo: r.owner ? { owner: r.owner } : {},
          status: { name: 'RUNNING' },
          typedSearchAttributes: new TypedSearchAttributes(r.owner ? [{ key: RENDER_OWNER, value: r.owner }] : []),
        };
      },
      cancel: async () => {
        cancelled.push(id);
      },
    }),
  },
  workflowService: {
    listWorkflowExecutions: async (req: { query: string }) => {
      queries.push(req.query);
      return { executions: [] };
    },
  },
  options: { loadedDataConverter: {} },
} as unknown as Client;

let front: TestFront;
beforeAll(async () => {
  front = await startTestFront({ API_KEYS: JSON.stringify(KEYS.slice(0, 2)), API_TOKEN: KEYS[2]!.token }, { client });
}, 60_000);
afterAll(async () => front?.close());

const img2img = JSON.stringify({ prompt: 'p', init_images: [makePng(64, 64, () => [1, 2, 3, 255]).toString('base64')], steps: 1 });

async function startAs(name: string, headers: Record<string, string> = {}): Promise<string> {
  const res = await front.app.inject({
    method: 'POST',
    url: '/sdapi/v1/img2img',
    headers: { 'content-type': 'application/json', ...auth(name), ...headers },
    payload: img2img,
  });
  expect(res.body).toContain('no GPU in this test');
  const start = front.starts.at(-1)!;
  renders.set(start.opts.renderId, start.opts.owner !== undefined ? { owner: start.opts.owner } : {});
  return start.opts.renderId;
}

describe('keys', () => {
  it('API_TOKEN is the operator key named default; API_KEYS adds named keys; bad key files refuse to start', () => {
    expect(loadApiKeys({ API_TOKEN: 'x'.repeat(20) })).toEqual([{ name: 'default', role: 'operator', token: 'x'.repeat(20) }]);
    expect(() => loadConfig({ API_KEYS: '[{"name":"a b","token":"0123456789abcdef"}]' })).toThrow(/API_KEYS: 0.name/);
    expect(() => loadConfig({ API_KEYS: JSON.stringify([KEYS[0], { ...KEYS[1], token: KEYS[0]!.token }]) })).toThrow(/same token/);
  });

  it('a request without a known key is a 401', async () => {
    const res = await front.app.inject({ method: 'GET', url: '/renders', headers: { authorization: 'Bearer nope-nope-nope-nope' } });
    expect(res.statusCode).toBe(401);
  });
});

describe('M3: each client sees only its own renders', () => {
  it('records the key as the render owner; key B cannot read, cancel or replay key A’s render; the operator can', async () => {
    const a = await startAs('alice');
    expect(renders.get(a)).toEqual({ owner: 'alice' });
    for (const [method, url] of [
      ['GET', `/renders/${a}`],
      ['GET', `/renders/${a}/outputs/0`],
      ['POST', `/renders/${a}/cancel`],
      ['POST', `/renders/${a}/replay`],
    ] as const) {
      const res = await front.app.inject({ method, url, headers: auth('bob') });
      expect(res.statusCode, `${method} ${url} as bob`).toBe(404);
    }
    expect(cancelled).toEqual([]);
    const own = await front.app.inject({ method: 'POST', url: `/renders/${a}/cancel`, headers: auth('alice') });
    expect(own.statusCode).toBe(202);
    const ops = await front.app.inject({ method: 'POST', url: `/renders/${a}/cancel`, headers: auth('ops') });
    expect(ops.statusCode).toBe(202);
    expect(cancelled).toEqual([a, a]);
  });

  it('a client key’s list is narrowed to its own renders, whatever owner it asks for; an operator’s is not', async () => {
    queries.length = 0;
    await front.app.inject({ method: 'GET', url: '/renders?owner=alice', headers: auth('bob') });
    await front.app.inject({ method: 'GET', url: '/renders', headers: auth('ops') });
    expect(queries[0]).toContain(`RenderOwner = 'bob'`);
    expect(queries[0]).not.toContain(`'alice'`);
    expect(queries[1]).not.toContain('RenderOwner');
  });

  it('the same Idempotency-Key from two keys is two renders (one never attaches to the other’s)', async () => {
    const a = await startAs('alice', { 'idempotency-key': 'same-key' });
    const b = await startAs('bob', { 'idempotency-key': 'same-key' });
    expect(a).not.toBe(b);
  });

  it('shared options change only with an operator key; a client key’s choice of model is its own', async () => {
    const set = (name: string, model: string) =>
      front.app.inject({
        method: 'POST',
        url: '/sdapi/v1/options',
        headers: { ...auth(name), 'content-type': 'application/json' },
        payload: { sd_model_checkpoint: model },
      });
    const get = async (name: string) => (await front.app.inject({ method: 'GET', url: '/sdapi/v1/options', headers: auth(name) })).json().sd_model_checkpoint;
    const before = await get('ops');
    expect((await set('alice', 'imagegen-qwen-image')).statusCode).toBe(200);
    const aliceModel = await get('alice');
    expect(aliceModel).not.toBe(before);
    expect(await get('bob')).toBe(before);
    expect(await get('ops')).toBe(before);
  });
});
