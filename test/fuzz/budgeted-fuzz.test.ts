/**
 * The budgeted fuzzer: at least 10 000 requests (FUZZ_REQUESTS) against the real service (start mode,
 * child process, real Temporal, fake ComfyUI), first every reproduction of the hostile-input report, then
 * grammar-generated traffic over every route and content type. It fails on:
 * - any 5xx, or a request that hangs;
 * - an error without the route family's envelope (A1111 `detail`, OpenAI `error.message`);
 * - a sync A1111 render id on an answer that is not a 200 (a render started for input that did not render);
 * - an event-loop stall of the service over its budget (its own monitorEventLoopDelay, scraped, counted up to what
 *   its main thread ran in that window, so that a neighbour hogging the cores is not the service's stall). The
 *   budget is 200 ms, or three times the longest stall that well-formed traffic caused in the same run, whichever
 *   is larger: a loaded machine makes the same work take longer, and a fixed number would then judge the machine;
 *   the fuzz's maximum is over 10 000 requests against the baseline's 60 (110 ms against a 36 ms baseline was
 *   seen next to two CPU hogs), while the parses this guards against stalled for 0.6 s to seconds (issue 17);
 * - resident memory growing more than 100 MB over its warmed-up baseline.
 * The traffic is deterministic for a seed (FUZZ_SEED, printed); the totals are printed at the end.
 */
import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import fc from 'fast-check';
import { Agent, fetch as undiciFetch, type RequestInit as UndiciRequestInit } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFakeComfyUI, type FakeComfyUI } from '../../tools/fake-comfyui/server.ts';
import { startService, type TestService } from '../support/service.ts';
import { startTestTemporal, type TestTemporal } from '../support/temporal.ts';
import { BudgetWatch } from './budget.ts';
import { generators } from './generators.ts';
import { makeBaseImages, type BaseImages } from './grammar/containers.ts';
import { validPng } from './grammar/png.ts';
import { b64, json, type FuzzRequest } from './requests.ts';
import { RENDERABLE, reproductions } from './seeds.ts';

const REQUESTS = Number(process.env.FUZZ_REQUESTS ?? 10_000);
const SEED = Number(process.env.FUZZ_SEED ?? 20_261_201);
const CONCURRENCY = 4;
/** The stall budget on a quiet machine; a loaded one is judged against its own baseline (see stallBudget). */
const STALL_BUDGET_MS = 200;
/** How many times the baseline's worst stall the fuzz's worst may be (a maximum over far more requests). */
const STALL_BASELINE_FACTOR = 3;
/** Well-formed requests sent to measure the baseline stall, CONCURRENCY at a time, before the fuzz. */
const BASELINE_REQUESTS = 60;
const RSS_BUDGET_BYTES = 100 * 1024 * 1024;
/** A request still unanswered after this long counts as a hang. */
const HANG_MS = 60_000;

let temporal: TestTemporal;
let fake: FakeComfyUI;
let svc: TestService;
let images: BaseImages;

const problems: string[] = [];
const statuses = new Map<number, number>();
const inFlight = new Set<string>();
let sent = 0;

beforeAll(async () => {
  [temporal, fake, images] = await Promise.all([
    startTestTemporal(),
    startFakeComfyUI({ port: 0, dataDir: mkdtempSync(path.join(os.tmpdir(), 'cd-fuzz-comfy-')), logLevel: 'silent' }),
    makeBaseImages(),
  ]);
  svc = await startService({
    temporalAddress: temporal.address,
    comfyUrl: fake.url,
    // The heap flags and malloc settings npm start runs with (scripts/run.sh): the memory budget is about the
    // service as it is deployed.
    nodeArgs: ['--heap-growing-percent=30', '--max-semi-space-size=2'],
    env: {
      MALLOC_ARENA_MAX: '2',
      MALLOC_MMAP_THRESHOLD_: '131072',
      MALLOC_TRIM_THRESHOLD_: '131072',
      // 1.5 MiB images keep every parser reachable while the largest legal body (a video with 16 base64
      // references: 33 MiB) stays well inside the memory budget; with 20 MiB images one legal img2img body is
      // already ~100 MB, read and then parsed. The reproductions at the default limits are tested one by one in
      // test/unit/hostile-bytes.test.ts.
      MAX_IMAGE_BYTES: String(1.5 * 1024 * 1024),
      // Likewise 4 Mpx: decoding a 16 Mpx image legitimately takes ~64 MB of pixels in a byte worker.
      MAX_IMAGE_PIXELS: String(4 * 1024 * 1024),
      // Outputs up to 512² (fitted, with a warning): the fuzzer is about what requests send, not about the
      // cost of answering with a batch of 1536² images, which the benchmarks measure.
      MAX_RENDER_PIXELS: String(512 * 512),
      MAX_BATCH: '4',
      DEFAULT_MODEL: 'imagegen-flux-schnell',
      MAX_WAITING_RENDERS: '5000',
      // No upload-rate minimum: next to CI's CPU hogs the fuzzer's own uploads (and this service's reading of
      // them) slow below it, and the large-body gate then answers 408 and closes the socket mid-body, which the
      // fuzzer would count as an unanswered request. The gate is the hostile-client tests' to judge (M2).
      MIN_UPLOAD_BYTES_PER_S: '0',
    },
  });
}, 240_000);

afterAll(async () => {
  await svc?.kill('SIGKILL');
  await fake?.close();
  await temporal?.stop();
});

function envelopeProblem(req: FuzzRequest, status: number, text: string): string | undefined {
  if (status < 400) return undefined;
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    parsed = undefined;
  }
  const p = parsed as { detail?: unknown; error?: { message?: unknown } } | undefined;
  if (req.path.startsWith('/sdapi/')) {
    if (typeof p?.detail !== 'string' || p.detail === '') return `A1111 error without a detail text`;
  } else if (req.path.startsWith('/v1/')) {
    if (typeof p?.error?.message !== 'string' || p.error.message === '') return `OpenAI-style error without error.message`;
  }
  return undefined;
}

async function send(req: FuzzRequest): Promise<void> {
  sent++;
  const tag = `#${sent} ${req.label} ${req.method} ${req.path}`;
  inFlight.add(tag);
  const body = req.body?.();
  const streamed = body !== undefined && typeof body !== 'string' && !Buffer.isBuffer(body);
  const init: RequestInit & { duplex?: 'half' } = {
    method: req.method,
    headers: req.headers,
    signal: AbortSignal.timeout(HANG_MS),
    ...(body === undefined ? {} : { body: streamed ? ReadableStream.from(body) : (body as string) }),
    ...(streamed ? { duplex: 'half' as const } : {}),
  };
  try {
    const res = await fetchRetryingStaleSocket(`${svc.url}${req.path}`, init, streamed);
    const text = await res.text();
    statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
    const sample = typeof body === 'string' ? body.slice(0, 200) : Buffer.isBuffer(body) ? `<${body.length} bytes>` : '<stream>';
    if (res.status >= 500) problems.push(`${tag}: ${res.status} ${text.slice(0, 300)} for ${sample}`);
    const env = envelopeProblem(req, res.status, text);
    if (env) problems.push(`${tag}: ${res.status} ${env}: ${text.slice(0, 200)}`);
    const renderId = res.headers.get('x-render-id');
    if (renderId && /^\/sdapi\/v1\/(txt2img|img2img)$/.test(req.path) && res.status !== 200) {
      problems.push(`${tag}: render ${renderId} started for input answered ${res.status}: ${text.slice(0, 200)}`);
    }
  } catch (err) {
    // A body the server refused early (its Content-Length is over the route's limit) may end the upload with a
    // reset: an answer, not a fault. Any body larger than the sockets' buffers (64 KiB) can lose that race: a
    // png-info body under 1 MiB did, twice in a row, in some runs and not in others.
    const cause = (err as { cause?: { code?: string } }).cause?.code;
    const large = streamed || (typeof body === 'string' || Buffer.isBuffer(body) ? body.length >= EARLY_REFUSAL_RACE_BYTES : false);
    if (!(large && SOCKET_ERRORS.has(cause ?? ''))) {
      problems.push(`${tag}: no answer (${(err as Error).name}: ${(err as Error).message}${cause ? ` ${cause}` : ''})`);
    }
  } finally {
    inFlight.delete(tag);
  }
}

const NULL_BODY_STATUSES = new Set([101, 204, 205, 304]);
const SOCKET_ERRORS = new Set(['ECONNRESET', 'UND_ERR_SOCKET', 'EPIPE']);
/** Bodies at least this large may be cut off by an early refusal before the client reads the answer. */
const EARLY_REFUSAL_RACE_BYTES = 64 * 1024;

/**
 * One retry when a kept-alive socket turns out closed (the server's keep-alive timeout racing the client's
 * reuse): what every HTTP client does, and the request never reached the service. The retry goes over a new
 * connection of its own: through the shared pool it could take another socket of the same age and fail the same
 * way (a 23 KB png-info failed so twice in a row next to two CPU hogs, and the same request answered 400 at
 * once when sent alone). A failure on a fresh connection is the service's, and counts.
 */
async function fetchRetryingStaleSocket(url: string, init: RequestInit, streamed: boolean): Promise<Response> {
  try {
    return await fetch(url, init);
  } catch (err) {
    const cause = (err as { cause?: { code?: string } }).cause?.code;
    if (streamed || !SOCKET_ERRORS.has(cause ?? '')) throw err;
    const fresh = new Agent({ pipelining: 0 });
    try {
      const res = await undiciFetch(url, { ...(init as UndiciRequestInit), dispatcher: fresh });
      const text = await res.text();
      // A status without a body (204, 304) may not be given one.
      return new Response(NULL_BODY_STATUSES.has(res.status) ? null : text, { status: res.status, headers: new Headers([...res.headers]) });
    } finally {
      await fresh.close();
    }
  }
}

async function sendAll(requests: Iterable<FuzzRequest>, concurrency = CONCURRENCY): Promise<void> {
  const it = requests[Symbol.iterator]();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      for (let next = it.next(); !next.done; next = it.next()) await send(next.value);
    }),
  );
}

/** One request of each route family, valid, so lazy modules and first-render paths load before budgets count. */
function warmUp(): FuzzRequest[] {
  const png = b64(validPng(64, 64));
  return [
    json('warm txt2img', '/sdapi/v1/txt2img', RENDERABLE),
    json('warm img2img', '/sdapi/v1/img2img', { ...RENDERABLE, init_images: [png], mask: png }),
    json('warm png-info png', '/sdapi/v1/png-info', { image: png }),
    json('warm png-info jpeg', '/sdapi/v1/png-info', { image: b64(images.jpeg) }),
    json('warm png-info webp', '/sdapi/v1/png-info', { image: b64(images.webp) }),
    json('warm extras', '/sdapi/v1/extra-single-image', { image: png, upscaling_resize: 2 }),
    json('warm jpeg render', '/sdapi/v1/txt2img', { ...RENDERABLE, override_settings: { samples_format: 'jpg' } }),
    json('warm video', '/v1/videos/sync', { prompt: 'warm', model: 'videogen-wan22-5b', size: '64x64', num_frames: 5, num_inference_steps: 1 }),
    json('warm openai', '/v1/images/generations', { prompt: 'warm', model: 'imagegen-flux-schnell', size: '64x64', seed: 1 }),
  ];
}

/**
 * The longest stall well-formed traffic causes on this machine now: the warm-up's requests again and again,
 * as many at a time as the fuzz sends. What the fuzz may cost is judged against it.
 */
async function baselineStallMs(): Promise<number> {
  const watch = new BudgetWatch(svc.url, svc.child.pid!, Number.POSITIVE_INFINITY, () => [...inFlight]);
  await watch.start();
  const benign = warmUp().filter((r) => !r.path.startsWith('/v1/videos'));
  await sendAll(
    Array.from({ length: BASELINE_REQUESTS }, (_, i) => benign[i % benign.length]!),
    CONCURRENCY,
  );
  await watch.stop();
  return watch.maxStallMs;
}

describe('budgeted fuzzer', () => {
  it(`${REQUESTS} generated requests plus every reproduction: no 5xx, no stall over max(${STALL_BUDGET_MS} ms, ${STALL_BASELINE_FACTOR} × the same run's baseline), no RSS growth over 100 MB`, async () => {
    await sendAll(warmUp());
    // The warm-up's answers are held to the same rules (a broken route, e.g. a video render's 500, shows here first).
    expect(problems.slice(0, 40), 'warm-up traffic').toEqual([]);
    const baseline = await baselineStallMs();
    const stallBudget = Math.max(STALL_BUDGET_MS, STALL_BASELINE_FACTOR * baseline);
    process.stdout.write(`fuzz: baseline stall of well-formed traffic ${Math.round(baseline)} ms, stall budget ${Math.round(stallBudget)} ms\n`);
    expect(problems.slice(0, 40), 'well-formed baseline traffic').toEqual([]);
    const loras = (await (await fetch(`${svc.url}/sdapi/v1/loras`)).json()) as Array<{ name: string }>;
    const watch = new BudgetWatch(svc.url, svc.child.pid!, stallBudget, () => [...inFlight]);
    await watch.start();
    const seeds = reproductions(
      images,
      loras.map((l) => l.name),
    );
    // One at a time: each reproduction's stall and memory are its own.
    await sendAll(seeds, 1);
    const generated = fc.sample(generators(images), { seed: SEED, numRuns: REQUESTS });
    await sendAll(generated);
    await watch.stop();

    expect(svc.child.exitCode, 'the service exited').toBeNull();
    const byStatus = [...statuses.entries()]
      .sort(([a], [b]) => a - b)
      .map(([s, n]) => `${s}:${n}`)
      .join(' ');
    process.stdout.write(
      `fuzz: ${sent} requests (${seeds.length} reproductions, ${generated.length} generated, seed ${SEED}), ` +
        `max event-loop stall ${Math.round(watch.maxStallMs)} ms (loop late at most ${Math.round(watch.maxLagMs)} ms, CPU starvation included), max RSS growth ${Math.round(watch.maxRssGrowth / 1024 / 1024)} MB, statuses ${byStatus}\n`,
    );
    for (const g of watch.growth) process.stdout.write(`fuzz: RSS ${g.slice(0, 400)}\n`);
    expect(sent).toBeGreaterThanOrEqual(REQUESTS);
    expect(problems.slice(0, 40)).toEqual([]);
    expect(watch.stalls.slice(0, 20)).toEqual([]);
    expect(watch.maxRssGrowth, `RSS grew by steps:\n${watch.growth.join('\n')}`).toBeLessThan(RSS_BUDGET_BYTES);
  }, 1_500_000);
});
