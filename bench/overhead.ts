/**
 * 1. Orchestration overhead: N sequential 512×512 txt2img renders through the whole stack (HTTP → front →
 * Temporal workflow → activities → fake ComfyUI → response) against the same graphs run by a direct client
 * (ComfyClient + submitAndFollow + /view) on the same fake at zero render time, interleaved in one run.
 */
import { randomUUID } from 'node:crypto';
import { normalizeRequest } from '../src/api/a1111/normalize.ts';
import { ComfyClient } from '../src/comfyui/client.ts';
import { submitAndFollow } from '../src/comfyui/submit-and-follow.ts';
import type { ComfyGraph } from '../src/comfyui/graph.ts';
import { planRender } from '../src/models/plan.ts';
import { MODEL, type BenchContext } from './lib/context.ts';
import { sharedFloor, type Floor } from './lib/floor.ts';
import { fetchHistory, segmentMedians, timeline, type Mark } from './lib/history.ts';
import { dist, fmtDist, log, ms, nowMs, type BenchResult, BEFORE } from './lib/report.ts';
import { postJson } from './lib/stack.ts';

export const BUDGET_MS = 40;

const LIMITS = { maxImageBytes: 64 << 20, maxImagePixels: 64 << 20, maxBatch: 8, maxExtraImages: 3 };

export function txt2imgBody(tag: string, seed: number, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return { prompt: `bench ${tag}`, model: MODEL, width: 512, height: 512, seed, ...extra };
}

/** The graph the worker would build for this body (same normalisation and planning code). */
export function graphFor(body: Record<string, unknown>, renderId: string): ComfyGraph {
  const { request } = normalizeRequest('txt2img', body, { defaultModel: MODEL, random: Math.random, limits: LIMITS });
  return planRender(request, { renderId }).items[0]!.graph;
}

export async function directRender(client: ComfyClient, graph: ComfyGraph): Promise<number> {
  const t0 = nowMs();
  const r = await submitAndFollow(client, {
    graph,
    promptId: randomUUID(),
    stallTimeoutMs: 30_000,
    pollIntervalMs: 1_000,
    signal: AbortSignal.timeout(30_000),
  });
  let bytes = 0;
  for (const f of r.files) if (f.type === 'output') bytes += (await client.view(f)).data.length;
  const t1 = nowMs();
  if (bytes === 0) throw new Error('direct render produced no image');
  return t1 - t0;
}

export async function stackRender(url: string, body: Record<string, unknown>): Promise<{ ms: number; renderId: string; sentAt: number; doneAt: number }> {
  const r = await postJson(`${url}/sdapi/v1/txt2img`, JSON.stringify(body), AbortSignal.timeout(60_000));
  if (r.status !== 200) throw new Error(`txt2img answered ${r.status}: ${r.body.toString('utf8').slice(0, 300)}`);
  const json = JSON.parse(r.body.toString('utf8')) as { images?: string[] };
  if (!json.images?.length) throw new Error('txt2img returned no images');
  return { ms: r.doneAt - r.sentAt, renderId: r.headers.get('x-render-id') ?? '', sentAt: r.sentAt, doneAt: r.doneAt };
}

export async function benchOverhead(ctx: BenchContext): Promise<BenchResult> {
  const { fake, svc } = await ctx.single();
  const { client: temporal, temporal: server } = await ctx.temporal();
  const n = ctx.smoke ? 3 : ctx.quick ? 12 : 40;
  // The floor needs a webpack bundle of its workflow (a few CPU seconds): full runs only.
  const floor: Floor | undefined = ctx.quick ? undefined : await sharedFloor(ctx, server.address, temporal);
  const warm = ctx.smoke ? 1 : ctx.quick ? 3 : 5;
  const comfy = new ComfyClient({ baseUrl: fake.url });
  try {
    // Warm-up: JIT, keep-alive connections, the worker's /object_info cache, the fake's loader-node cache.
    for (let i = 0; i < warm; i++) {
      await stackRender(svc.url, txt2imgBody(`warm stack ${i}`, 900_000 + i));
      await directRender(comfy, graphFor(txt2imgBody(`warm direct ${i}`, 950_000 + i), `bench-warm-${i}`));
      await floor?.once();
    }
    const stack: number[] = [];
    const direct: number[] = [];
    const floorMs: number[] = [];
    const runs: Array<{ renderId: string; sentAt: number; doneAt: number }> = [];
    const stopAt = Math.min(ctx.deadline, Date.now() + (ctx.quick ? 20_000 : 60_000));
    for (let i = 0; i < n && Date.now() < stopAt; i++) {
      // Distinct seeds everywhere: no render may hit the fake's output cache for its sampler.
      const sBody = txt2imgBody(`overhead stack ${i}`, 100_000 + i);
      const dGraph = graphFor(txt2imgBody(`overhead direct ${i}`, 200_000 + i), `bench-direct-${i}`);
      const doStack = async () => {
        const r = await stackRender(svc.url, sBody);
        stack.push(r.ms);
        runs.push(r);
      };
      const doDirect = async () => direct.push(await directRender(comfy, dGraph));
      // Alternate which goes first so drift (GC, caches) does not favour one side.
      if (i % 2 === 0) {
        await doStack();
        await doDirect();
      } else {
        await doDirect();
        await doStack();
      }
      if (floor) floorMs.push(await floor.once());
    }
    const s = dist(stack);
    const d = dist(direct);
    const diff = s.p50 - d.p50;
    log(`overhead: stack p50 ${s.p50.toFixed(1)} ms, direct p50 ${d.p50.toFixed(1)} ms`);

    // Where the stack's time goes: Temporal event times (same clock) between the client's send and receive.
    const tls: Mark[][] = [];
    for (const r of runs.slice(0, 20)) {
      const h = await fetchHistory(temporal, r.renderId);
      tls.push([{ label: 'http.sent', at: r.sentAt }, ...timeline(h), { label: 'http.done', at: r.doneAt }]);
    }
    const segs = segmentMedians(tls);
    const f = dist(floorMs);
    const floorLines = floor
      ? [
          `temporal floor (late-bound workflow shape as start mode runs it: one GPU-queue activity, no-op, worker in the bench process): ${fmtDist(f)}`,
          `  → of the ${ms(diff)} overhead, ~${ms(f.p50)} is Temporal round trips for this workflow shape; ` +
            `the rest (~${ms(diff - f.p50)}) is front + activities beyond ComfyUI's own work`,
        ]
      : ['temporal floor: skipped in --quick'];
    return {
      name: 'overhead',
      before: BEFORE.overhead,
      title: 'Orchestration overhead per render (512×512 txt2img, fake ComfyUI at zero render time)',
      figure: `p50 overhead ${ms(diff)} (stack p50 ${ms(s.p50)} − direct p50 ${ms(d.p50)}; ratio ${(s.p50 / d.p50).toFixed(1)}×)`,
      budget: `≤ ${BUDGET_MS} ms p50`,
      verdict: s.n === 0 || d.n === 0 ? 'ERROR' : diff <= BUDGET_MS ? 'PASS' : 'OVER',
      lines: [
        `full stack  (POST /sdapi/v1/txt2img → images)  : ${fmtDist(s)}`,
        `direct      (ComfyClient submitAndFollow + /view): ${fmtDist(d)}`,
        `p95 difference: ${ms(s.p95 - d.p95)}`,
        ...floorLines,
        '',
        `where the stack's time goes (p50 per segment over ${tls.length} renders; Temporal event times):`,
        ...segs.map((x) => `  ${x.segment.padEnd(44)} ${ms(x.p50).padStart(9)}`),
      ],
    };
  } finally {
    await comfy.close();
  }
}
