/**
 * The fuzzer's hostile clients at the route level (issue 27): against the real service (start mode, child
 * process, real Temporal, fake ComfyUI) with named keys (two client keys and an operator) and the default
 * limits, every route `/openapi.json` lists (enumerated at run time, path parameters filled with real render
 * ids of each key and bogus ones) plus `/metrics`, `/ready` and the Temporal UI proxy, requested by every kind
 * of caller (each key; none; a wrong token; Basic auth with the token as password; malformed credentials) with
 * hostile headers (Host, Origin, X-Forwarded-Host/-Prefix/-For, an Idempotency-Key reused across keys) and
 * every JSON body shape carrying prototype-named and unknown keys. It fails on:
 * - any 5xx but a 503 with Retry-After (or a 504 the route documents), in the route family's envelope;
 * - a 4xx outside the route family's envelope (A1111 `detail`, OpenAI/video `error.message`, ComfyUI's `error`);
 * - a client key seeing, reading, cancelling or replaying another key's render: an answer naming a render id
 *   of another key that the request did not name, or a 2xx to a request naming one; the same Idempotency-Key
 *   under two keys must be two renders; every render the run started belongs to the key that started it;
 * - a forwarded host or prefix reflected in an answer (TRUST_FORWARDED_HEADERS is off by default);
 * - a render meeting an out-of-memory error on the GPU (the fake's `/free` unloads, or a run that errored):
 *   an SD upscale of an 8×2 000 000 sliver with a real upscaler name is among the requests (H2);
 * - the service's event-loop stall over max(200 ms, 3× the same run's baseline), its resident memory (front
 *   and worker thread: one process) growing over 100 MB, or its worker thread reported not answering.
 * Deterministic for a seed (FUZZ_SEED); H1, M1 and M2 (traffic shapes) are hostile-clients.test.ts's.
 */
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFakeComfyUI, type FakeComfyUI } from '../../tools/fake-comfyui/server.ts';
import { startService, type TestService } from '../support/service.ts';
import { startTestTemporal, type TestTemporal } from '../support/temporal.ts';
import { sdUpscaleSliverBody, sliverPng } from '../support/hostile-clients.ts';
import { BudgetWatch } from './budget.ts';
import { RENDERABLE } from './seeds.ts';

const SEED = Number(process.env.FUZZ_SEED ?? 20_261_204);
/** Sampled requests on top of every route once per caller: the run stays within a few seconds of traffic. */
const SAMPLED = Number(process.env.FUZZ_ROUTE_REQUESTS ?? 300);
const CONCURRENCY = 4;
const STALL_BUDGET_MS = 200;
const STALL_BASELINE_FACTOR = 3;
const RSS_BUDGET_BYTES = 100 * 1024 * 1024;

const KEYS = [
  { name: 'alice', token: 'alice-token-fuzz-0123456789', role: 'client' },
  { name: 'bob', token: 'bob-token-fuzz-0123456789', role: 'client' },
  { name: 'ops', token: 'ops-token-fuzz-0123456789', role: 'operator' },
] as const;
type KeyName = (typeof KEYS)[number]['name'];
const tokenOf = (k: KeyName) => KEYS.find((x) => x.name === k)!.token;

/** Who calls: a key (by Bearer or Basic), or nobody the service knows. */
interface Caller {
  label: string;
  key?: KeyName;
  authorization?: string;
}
const basic = (user: string, pass: string) => `Basic ${Buffer.from(`${user}:${pass}`).toString('base64')}`;
const CALLERS: Caller[] = [
  { label: 'alice', key: 'alice', authorization: `Bearer ${tokenOf('alice')}` },
  { label: 'bob', key: 'bob', authorization: `Bearer ${tokenOf('bob')}` },
  { label: 'ops', key: 'ops', authorization: `Bearer ${tokenOf('ops')}` },
  { label: 'alice basic', key: 'alice', authorization: basic('anyone', tokenOf('alice')) },
  { label: 'no key', authorization: undefined },
  { label: 'wrong token', authorization: 'Bearer not-a-token-of-this-service' },
  { label: 'token prefix', authorization: `Bearer ${tokenOf('alice').slice(0, -1)}` },
  { label: 'token plus junk', authorization: `Bearer ${tokenOf('alice')} junk` },
  { label: 'basic junk', authorization: `Basic ${tokenOf('bob')}!!` },
  { label: 'other scheme', authorization: `Token ${tokenOf('ops')}` },
];

const EVIL_HOST = 'evil-forwarded.example';
const EVIL_PREFIX = '/evil-prefix';
const HEADER_SHAPES: Array<Record<string, string>> = [
  {},
  { 'x-forwarded-host': EVIL_HOST, 'x-forwarded-proto': 'https', 'x-forwarded-prefix': EVIL_PREFIX },
  { 'x-forwarded-for': '6.6.6.6, 127.0.0.1', forwarded: `for=6.6.6.6;host=${EVIL_HOST}` },
  { origin: 'https://evil-origin.example', referer: 'https://evil-origin.example/x' },
  { host: 'evil-host.example' },
  { 'idempotency-key': 'fuzz-shared-key' },
  { 'x-priority': '1' },
];

/**
 * Body keys named like Object.prototype members, and keys no route knows, in three sets: a JSON parser that
 * refuses `__proto__` or `constructor.prototype` refuses the whole body, so the method names go on their own
 * too (a body key `toString` reaching a lookup table was a 500: issue 27 L1).
 */
const HOSTILE_KEY_SETS: string[] = [
  '"toString":"x","valueOf":1,"hasOwnProperty":[],"isPrototypeOf":null,"constructor":"x","propertyIsEnumerable":{},"zz_unknown_field":{"a":1}',
  '"__proto__":{"polluted":true}',
  '"constructor":{"prototype":{"polluted":true}}',
];

/** A body a render route could start from, per route (what the shapes add hostile keys to). */
function baseBody(path: string): Record<string, unknown> {
  if (path.startsWith('/sdapi/v1/txt2img')) return { ...RENDERABLE, width: 64, height: 64 };
  if (path.startsWith('/v1/images/')) return { prompt: 'fuzz', model: 'imagegen-flux-schnell', size: '64x64', seed: 1 };
  if (path.startsWith('/v1/videos')) return { prompt: 'fuzz', model: 'videogen-wan22-5b', size: '64x64', num_frames: 5, num_inference_steps: 1 };
  if (path.startsWith('/sdapi/v1/options')) return { sd_model_checkpoint: 'FLUX.1-schnell' };
  if (path.startsWith('/renders/') && path.endsWith('/replay')) return { new_seed: true };
  return {};
}

/** `value`'s JSON with `keys` (a JSON members list) added at its top level. */
function withKeys(value: Record<string, unknown>, keys: string): string {
  const json = JSON.stringify(value);
  return json === '{}' ? `{${keys}}` : `${json.slice(0, -1)},${keys}}`;
}

/** Every JSON body shape, each carrying the hostile keys where it can. */
function bodyShapes(path: string): string[] {
  const base = baseBody(path);
  return [
    ...HOSTILE_KEY_SETS.map((keys) => withKeys(base, keys)),
    withKeys({}, HOSTILE_KEY_SETS[0]!),
    // Nested objects too, over the route's own small body (a video at its default size is larger than the fake's
    // GPU holds: 1280×704×121 latent pixels against its 64 Mpx, a limit of the fake, not of the request).
    withKeys(base, `"override_settings":{${HOSTILE_KEY_SETS[0]}},"alwayson_scripts":{${HOSTILE_KEY_SETS[0]}}`),
    `[${withKeys(base, HOSTILE_KEY_SETS[0]!)}]`,
    'null',
    '"constructor"',
  ];
}

interface Op {
  method: 'GET' | 'POST' | 'DELETE' | 'PUT';
  path: string;
  documented: string[];
}

interface Sent {
  tag: string;
  caller: Caller;
  method: string;
  path: string;
  headers: Record<string, string>;
  body?: string;
  documented: string[];
}

let temporal: TestTemporal;
let fake: FakeComfyUI;
let svc: TestService;
const problems: string[] = [];
const statuses = new Map<number, number>();
/** Render (and video, prompt) ids each key got back from the service. */
const idsOf = new Map<KeyName, Set<string>>(KEYS.map((k) => [k.name, new Set<string>()]));
const inFlight = new Set<string>();
/** The documented 503s (Retry-After), named when something went wrong on the GPU. */
const unavailable: string[] = [];
let sent = 0;

const opsHeaders = { authorization: `Bearer ${tokenOf('ops')}` };

beforeAll(async () => {
  [temporal, fake] = await Promise.all([startTestTemporal(), startFakeComfyUI({ port: 0, logLevel: 'silent' })]);
  // The default limits: only the keys and an upload minimum of none (a starved fuzzer's own upload is not the
  // service's fault: budgeted-fuzz.test.ts says why).
  svc = await startService({
    temporalAddress: temporal.address,
    comfyUrl: fake.url,
    // The heap flags and malloc settings npm start runs with (scripts/run.sh), as budgeted-fuzz.test.ts.
    nodeArgs: ['--heap-growing-percent=30', '--max-semi-space-size=2'],
    env: {
      API_KEYS: JSON.stringify(KEYS),
      MIN_UPLOAD_BYTES_PER_S: '0',
      DEFAULT_MODEL: 'imagegen-flux-schnell',
      MALLOC_ARENA_MAX: '2',
      MALLOC_MMAP_THRESHOLD_: '131072',
      MALLOC_TRIM_THRESHOLD_: '131072',
    },
  });
}, 240_000);

afterAll(async () => {
  await svc?.kill('SIGKILL');
  await fake?.close();
  await temporal?.stop();
});

const RENDER_ID = /render-[0-9a-z-]{10,}/g;

function envelopeProblem(path: string, status: number, type: string, text: string): string | undefined {
  if (status < 400) return undefined;
  // ComfyUI's own routes pass some of its refusals on as it answers them, without a body (an unknown model
  // folder: 404); every other family answers JSON.
  if (isComfyRoute(path) && text === '') return undefined;
  if (!type.includes('json')) return `a ${status} that is not JSON (${type})`;
  let p: { detail?: unknown; error?: unknown } | undefined;
  try {
    p = JSON.parse(text) as typeof p;
  } catch {
    return 'a JSON content type over a body that is not JSON';
  }
  const openAi = typeof (p?.error as { message?: unknown } | undefined)?.message === 'string';
  const a1111 = typeof p?.detail === 'string' && p.detail !== '';
  if (path.startsWith('/v1/')) return openAi ? undefined : 'an OpenAI-family error without error.message';
  if (isComfyRoute(path)) return openAi || typeof p?.error === 'string' || a1111 ? undefined : "a ComfyUI-family error without ComfyUI's error";
  return a1111 ? undefined : 'an A1111-family error without a detail text';
}

const COMFY_ROUTES = /^\/(api\/)?(prompt|history|view|upload|queue|interrupt|object_info|models|embeddings|system_stats|features|extensions)(\/|$|\?)/;
const isComfyRoute = (path: string) => COMFY_ROUTES.test(path);

/** Ids a request names (its path and body): an answer may repeat those. */
function namedIds(s: Sent): Set<string> {
  return new Set([...`${s.path} ${s.body ?? ''}`.matchAll(RENDER_ID)].map((m) => m[0]));
}

function ownerOfId(id: string): KeyName | undefined {
  for (const [k, ids] of idsOf) if (ids.has(id)) return k;
  return undefined;
}

function recordIds(s: Sent, res: Response, text: string): void {
  // An operator's renders are not judged (its replay of a client's render is the client's, by design).
  if (!s.caller.key || s.caller.key === 'ops' || res.status >= 300) return;
  const mine = idsOf.get(s.caller.key)!;
  const header = res.headers.get('x-render-id');
  if (header && !ownerOfId(header)) mine.add(header);
  // A new render's id in a start's answer (a video job's `id`, a replay's `renderId`): only for POSTs.
  if (s.method === 'POST') for (const m of text.matchAll(RENDER_ID)) if (!ownerOfId(m[0]) && !namedIds(s).has(m[0])) mine.add(m[0]);
}

function roomProblems(s: Sent, status: number, text: string): string[] {
  const key = s.caller.key;
  if (!key || key === 'ops') return [];
  const out: string[] = [];
  const named = namedIds(s);
  for (const id of named) {
    const owner = ownerOfId(id);
    if (!owner || owner === key || status >= 300) continue;
    // Acting on it (cancel, replay, delete) is a leak whatever the answer says; a read is one when the answer
    // holds the render (ComfyUI's /history/<id> answers {} for a prompt it does not know, as ComfyUI does).
    if (s.method !== 'GET' || text.includes(id)) out.push(`${key} got ${status} for ${owner}'s render ${id}: ${text.slice(0, 120)}`);
  }
  for (const m of text.matchAll(RENDER_ID)) {
    const owner = ownerOfId(m[0]);
    if (owner && owner !== key && !named.has(m[0])) out.push(`${key} was shown ${owner}'s render ${m[0]}`);
  }
  return out;
}

async function send(s: Sent): Promise<void> {
  sent++;
  const tag = `#${sent} ${s.caller.label} ${s.method} ${s.path}${s.headers.host ? ` host=${s.headers.host}` : ''}`;
  inFlight.add(tag);
  const headers: Record<string, string> = { ...s.headers };
  if (s.caller.authorization) headers.authorization = s.caller.authorization;
  if (s.body !== undefined) headers['content-type'] = 'application/json';
  try {
    const res = await fetch(`${svc.url}${s.path}`, {
      method: s.method,
      headers,
      signal: AbortSignal.timeout(60_000),
      ...(s.body !== undefined ? { body: s.body } : {}),
    });
    const type = res.headers.get('content-type') ?? '';
    const bytes = Buffer.from(await res.arrayBuffer());
    const text = type.includes('json') || type.startsWith('text/') ? bytes.toString('utf8') : '';
    statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
    const sample = `${tag} [${JSON.stringify(s.headers)}] ${s.body?.slice(0, 160) ?? ''}`;
    if (res.status >= 500) {
      const documented = res.status === 503 ? res.headers.get('retry-after') !== null : res.status === 504 && s.documented.includes('504');
      if (!documented) problems.push(`${sample}: ${res.status} ${text.slice(0, 240)}`);
      else unavailable.push(`${sample}: ${res.status} ${text.slice(0, 240)}`);
    }
    const env = envelopeProblem(s.path, res.status, type, text);
    if (env) problems.push(`${sample}: ${env}: ${text.slice(0, 200)}`);
    if (text.includes(EVIL_HOST) || text.includes(EVIL_PREFIX)) problems.push(`${sample}: a forwarded host or prefix reflected: ${text.slice(0, 200)}`);
    for (const p of roomProblems(s, res.status, text)) problems.push(`${sample}: ${p}`);
    recordIds(s, res, text);
  } catch (err) {
    problems.push(`${tag}: no answer (${(err as Error).name}: ${(err as Error).message})`);
  } finally {
    inFlight.delete(tag);
  }
}

async function sendAll(requests: Sent[], concurrency = CONCURRENCY): Promise<void> {
  let i = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (i < requests.length) await send(requests[i++]!);
    }),
  );
}

/** The routes `/openapi.json` lists, with the statuses each documents, plus the ones it does not describe. */
async function routes(): Promise<Op[]> {
  const doc = (await (await fetch(`${svc.url}/openapi.json`, { headers: opsHeaders })).json()) as {
    paths: Record<string, Record<string, { responses?: Record<string, unknown> }>>;
  };
  const ops: Op[] = [];
  for (const [path, methods] of Object.entries(doc.paths)) {
    for (const [method, op] of Object.entries(methods)) {
      if (!['get', 'post', 'delete', 'put'].includes(method)) continue;
      ops.push({ method: method.toUpperCase() as Op['method'], path, documented: Object.keys(op.responses ?? {}) });
    }
  }
  for (const path of ['/metrics', '/ready', '/temporal', '/temporal/', '/temporal/api/v1/namespaces', '/docs', '/openapi.json']) {
    if (!ops.some((o) => o.path === path)) ops.push({ method: 'GET', path, documented: [] });
  }
  return ops;
}

/** Fillings for a path parameter: every key's real ids, bogus ids, prototype names, traversal. */
function paramValues(name: string): string[] {
  const real = [...idsOf.values()].flatMap((ids) => [...ids].slice(0, 3));
  const bogus = ['render-00000000000000000000000000', '__proto__', 'constructor', 'toString', '..%2F..%2Fetc%2Fpasswd', '%00', 'x'.repeat(300)];
  return name === 'n' ? ['0', '1', '-1', '99999999999', '__proto__'] : [...real, ...bogus];
}

function fill(path: string, pick: (name: string, values: string[]) => string): string {
  return path.replace(/\{([^{}]+)\}/g, (_, name: string) => pick(name, paramValues(name)));
}

/** Every route once per caller (a real id of each key where the path takes one), then hostile bodies per route. */
function systematic(ops: Op[]): Sent[] {
  const out: Sent[] = [];
  let n = 0;
  for (const op of ops) {
    for (const caller of CALLERS) {
      const path = fill(op.path, (_, values) => values[n++ % values.length]!);
      out.push({ tag: '', caller, method: op.method, path, headers: {}, documented: op.documented, ...(op.method === 'GET' ? {} : { body: '{}' }) });
    }
    if (op.method !== 'GET') {
      for (const body of bodyShapes(op.path)) {
        out.push({
          tag: '',
          caller: CALLERS[n++ % 3]!,
          method: op.method,
          path: fill(op.path, (_, v) => v[n++ % v.length]!),
          headers: {},
          body,
          documented: op.documented,
        });
      }
    }
  }
  return out;
}

/** Random combinations of route, caller, path parameters, headers and body shape (fast-check, fixed seed). */
function sampled(ops: Op[]): Sent[] {
  const arb = fc
    .record({
      op: fc.constantFrom(...ops),
      caller: fc.constantFrom(...CALLERS),
      headers: fc.constantFrom(...HEADER_SHAPES),
      bodyIndex: fc.nat(7),
      paramIndex: fc.nat(1_000),
    })
    .map(({ op, caller, headers, bodyIndex, paramIndex }): Sent => {
      const path = fill(op.path, (_, values) => values[paramIndex % values.length]!);
      const body = op.method === 'GET' ? undefined : bodyShapes(op.path)[bodyIndex];
      return { tag: '', caller, method: op.method, path, headers, documented: op.documented, ...(body !== undefined ? { body } : {}) };
    });
  return fc.sample(arb, { seed: SEED, numRuns: SAMPLED });
}

/** Each client key starts a few renders of its own: the ids every later request is judged against. */
async function seedRenders(): Promise<void> {
  const seeds: Sent[] = [];
  for (const caller of CALLERS.slice(0, 2)) {
    seeds.push(
      {
        tag: '',
        caller,
        method: 'POST',
        path: '/sdapi/v1/txt2img',
        headers: {},
        body: JSON.stringify({ ...RENDERABLE, width: 64, height: 64 }),
        documented: [],
      },
      {
        tag: '',
        caller,
        method: 'POST',
        path: '/v1/videos',
        headers: {},
        body: JSON.stringify({ prompt: 'fuzz', model: 'videogen-wan22-5b', size: '64x64', num_frames: 5, num_inference_steps: 1 }),
        documented: [],
      },
      // The same Idempotency-Key under both keys: two renders, one each (never the other key's).
      {
        tag: '',
        caller,
        method: 'POST',
        path: '/sdapi/v1/txt2img',
        headers: { 'idempotency-key': 'fuzz-shared-key' },
        body: JSON.stringify(RENDERABLE),
        documented: [],
      },
    );
  }
  await sendAll(seeds, 2);
}

/** The worker thread answers the front's pings all along (`/health`, open without a key). */
function watchWorkerThread(): { stop(): Promise<string[]> } {
  const seen: string[] = [];
  let stopped = false;
  const loop = (async () => {
    while (!stopped) {
      const res = await fetch(`${svc.url}/health`).catch(() => undefined);
      const text = res ? await res.text() : '';
      if (/not answering/.test(text)) seen.push(text.slice(0, 300));
      await new Promise((r) => setTimeout(r, 250));
    }
  })();
  return {
    stop: async () => {
      stopped = true;
      await loop;
      return seen;
    },
  };
}

describe('hostile routes fuzzer', () => {
  it('every /openapi.json route by every kind of caller, hostile headers and prototype-named keys: no 5xx, envelopes, no key sees another key’s render, budgets held', async () => {
    await seedRenders();
    expect(problems, 'the seed renders').toEqual([]);
    for (const k of ['alice', 'bob'] as const) expect(idsOf.get(k)!.size, `${k}'s renders`).toBeGreaterThanOrEqual(2);
    const fakeBefore = (await (await fetch(`${fake.url}/__fake/stats`)).json()) as { unloadModelsRequests: number };

    // The baseline stall: the seed traffic again, as many at a time as the fuzz sends.
    const baseWatch = new BudgetWatch(svc.url, svc.child.pid!, Number.POSITIVE_INFINITY, () => [...inFlight], opsHeaders);
    await baseWatch.start();
    await sendAll(
      Array.from({ length: 24 }, (_, i): Sent => ({
        tag: '',
        caller: CALLERS[i % 3]!,
        method: 'GET',
        path: i % 2 ? '/renders?limit=20' : '/sdapi/v1/options',
        headers: {},
        documented: [],
      })),
    );
    await baseWatch.stop();
    const stallBudget = Math.max(STALL_BUDGET_MS, STALL_BASELINE_FACTOR * baseWatch.maxStallMs);

    const ops = await routes();
    const watch = new BudgetWatch(svc.url, svc.child.pid!, stallBudget, () => [...inFlight], opsHeaders);
    const thread = watchWorkerThread();
    await watch.start();
    // H2: an SD upscale of a sliver with a real upscaler name (its work must be bounded by the output).
    const sliver = sdUpscaleSliverBody(await sliverPng());
    await sendAll([{ tag: '', caller: CALLERS[0]!, method: 'POST', path: '/sdapi/v1/img2img', headers: {}, body: JSON.stringify(sliver), documented: [] }], 1);
    const planned = [...systematic(ops), ...sampled(ops)];
    await sendAll(planned);
    await watch.stop();
    const hung = await thread.stop();

    // Every render the run started belongs to the key that got its id (the operator sees them all).
    const list = (await (await fetch(`${svc.url}/renders?limit=100`, { headers: opsHeaders })).json()) as { renders: Array<{ id: string; owner?: string }> };
    for (const r of list.renders) {
      const got = ownerOfId(r.id);
      if (got && r.owner !== got) problems.push(`render ${r.id}: answered to ${got}, owned by ${r.owner ?? 'nobody'}`);
    }
    const shared = [...idsOf.entries()].filter(([k]) => k !== 'ops').map(([, ids]) => [...ids]);
    expect(new Set(shared[0]).size + new Set(shared[1]).size).toBe(new Set([...shared[0]!, ...shared[1]!]).size);

    const fakeAfter = (await (await fetch(`${fake.url}/__fake/stats`)).json()) as { unloadModelsRequests: number; outcomes: Record<string, string[]> };
    const errored = Object.entries(fakeAfter.outcomes).filter(([, o]) => o.includes('error'));
    if (fakeAfter.unloadModelsRequests > fakeBefore.unloadModelsRequests || errored.length > 0) {
      problems.push(
        `renders met errors on the GPU (out of memory: ${fakeAfter.unloadModelsRequests - fakeBefore.unloadModelsRequests} model unloads; errored prompts ${errored.length}); the 503s: ${unavailable.join(' || ').slice(0, 1500)}`,
      );
    }

    const byStatus = [...statuses.entries()]
      .sort(([a], [b]) => a - b)
      .map(([s, n]) => `${s}:${n}`)
      .join(' ');
    process.stdout.write(
      `hostile routes: ${sent} requests over ${ops.length} routes (seed ${SEED}), renders alice ${idsOf.get('alice')!.size} bob ${idsOf.get('bob')!.size} ops ${idsOf.get('ops')!.size}, ` +
        `max stall ${Math.round(watch.maxStallMs)} ms (budget ${Math.round(stallBudget)}), max RSS growth ${Math.round(watch.maxRssGrowth / 1024 / 1024)} MB, statuses ${byStatus}\n`,
    );
    expect(svc.child.exitCode, 'the service exited').toBeNull();
    expect(problems.slice(0, 40)).toEqual([]);
    expect(hung, 'the worker thread stopped answering').toEqual([]);
    expect(watch.stalls.slice(0, 20)).toEqual([]);
    expect(watch.maxRssGrowth, `RSS grew by steps:\n${watch.growth.join('\n')}`).toBeLessThan(RSS_BUDGET_BYTES);
  }, 600_000);
});
