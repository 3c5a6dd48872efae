/**
 * 2. Result latency after ComfyUI finishes: from the fake sending `executing {node: null}` (history is
 * already written; recorded by a runtime hook in this process) to the complete HTTP response arriving at
 * the client, same clock. The `execution_success` timestamp in ComfyUI's history is shown as a cross-check.
 */
import { renderIdForKey } from '../src/renders/render-ids.ts';
import type { Client } from '@temporalio/client';
import type { BenchContext } from './lib/context.ts';
import { sharedFloor } from './lib/floor.ts';
import { fetchHistory, segmentMedians, timeline, type Mark } from './lib/history.ts';
import { dist, fmtDist, log, ms, type BenchResult, BEFORE } from './lib/report.ts';
import { postJson } from './lib/stack.ts';
import { txt2imgBody } from './overhead.ts';

export const BUDGET_MS = 20;

export async function benchLatency(ctx: BenchContext): Promise<BenchResult> {
  const stack = await ctx.single();
  const { client: temporal, temporal: server } = await ctx.temporal();
  const n = ctx.smoke ? 3 : ctx.quick ? 10 : 30;
  const afterDone: number[] = [];
  const afterDoneHeaders: number[] = [];
  const afterSuccess: number[] = [];
  const resultAfterWfDone: number[] = [];
  const frontAfterWfDone: number[] = [];
  const runTag = Math.random().toString(36).slice(2, 8);
  const tls: Mark[][] = [];
  const stopAt = Math.min(ctx.deadline, Date.now() + (ctx.quick ? 15_000 : 40_000));
  for (let i = 0; i < 3; i++)
    await postJson(`${stack.svc.url}/sdapi/v1/txt2img`, JSON.stringify(txt2imgBody(`latency warm ${i}`, 990_000 + i)), AbortSignal.timeout(60_000));
  for (let i = 0; i < n && Date.now() < stopAt; i++) {
    // With an Idempotency-Key the render id is known up front: this process long-polls the same workflow's
    // result as the front does, which separates Temporal's delivery of the result from the front's own work.
    const key = `bench-latency-${runTag}-${i}`;
    const watcher = watchResult(temporal, renderIdForKey(key), Date.now() + 30_000);
    const r = await postJson(`${stack.svc.url}/sdapi/v1/txt2img`, JSON.stringify(txt2imgBody(`latency ${i}`, 300_000 + i)), AbortSignal.timeout(60_000), {
      'idempotency-key': key,
    });
    const resultAt = await watcher;
    if (r.status !== 200) throw new Error(`txt2img answered ${r.status}: ${r.body.toString('utf8').slice(0, 300)}`);
    const renderId = r.headers.get('x-render-id') ?? '';
    const ids = stack.promptIdsFor(renderId);
    if (ids.length !== 1) throw new Error(`expected one prompt for ${renderId}, found ${ids.length}`);
    const doneAt = stack.comfyDoneAt.get(ids[0]!);
    if (doneAt === undefined) throw new Error(`no executing:null seen for ${ids[0]}`);
    afterDone.push(r.doneAt - doneAt);
    afterDoneHeaders.push(r.headersAt - doneAt);
    const succ = stack.executionSuccessAt(ids[0]!);
    if (succ !== undefined) afterSuccess.push(r.doneAt - succ);
    const h = await fetchHistory(temporal, renderId);
    const wfDone = timeline(h).find((m) => m.label === 'wf.done')?.at;
    if (wfDone !== undefined && resultAt !== undefined) resultAfterWfDone.push(resultAt - wfDone);
    if (wfDone !== undefined) frontAfterWfDone.push(r.headersAt - wfDone);
    tls.push(
      [{ label: 'comfy.done', at: doneAt }, ...timeline(h), { label: 'http.headers', at: r.headersAt }, { label: 'http.done', at: r.doneAt }]
        .filter((m) => m.at >= doneAt - 0.5)
        .sort((a, b) => a.at - b.at),
    );
  }
  const d = dist(afterDone);
  log(`latency: p50 ${d.p50.toFixed(1)} ms after executing:null`);
  // Same run: what Temporal alone costs of this figure. The render's shape with no-op activities (full runs
  // only: the floor's worker needs a workflow bundle): from its GPU-queue activity returning to the client
  // holding the result. A real render spends that much after runPrompt has stored its outputs, before the
  // front can answer.
  const tails: number[] = [];
  if (!ctx.quick) {
    const floor = await sharedFloor(ctx, server.address, temporal);
    for (let i = 0; i < 3; i++) await floor.tail();
    const floorStop = Math.min(ctx.deadline - 2_000, Date.now() + 15_000);
    for (let i = 0; i < n && Date.now() < floorStop; i++) tails.push((await floor.tail()).tail);
  }
  const t = dist(tails);
  const floorLines =
    tails.length > 0
      ? [
          `temporal floor of the tail, same run (no-op GPU activity returns → client holds the result): ${fmtDist(t)}`,
          `  → ${t.p95 > BUDGET_MS ? `above the ${BUDGET_MS} ms budget before any outputs are collected or sent` : `leaves ${ms(BUDGET_MS - t.p95)} of the budget at p95`}`,
        ]
      : ['temporal floor of the tail: skipped in --quick'];
  return {
    name: 'latency',
    before: BEFORE.latency,
    title: 'Result latency after ComfyUI finishes (executing:null → HTTP response complete)',
    figure: `p50 ${ms(d.p50)}, p95 ${ms(d.p95)} after ComfyUI finished`,
    budget: `≤ ${BUDGET_MS} ms p95`,
    // The budget is on p95: a fast median with a slow tail does not pass.
    verdict: d.n === 0 ? 'ERROR' : d.p95 <= BUDGET_MS ? 'PASS' : 'OVER',
    lines: [
      `executing:null → response body complete : ${fmtDist(d)}`,
      `executing:null → response headers       : ${fmtDist(dist(afterDoneHeaders))}`,
      `history execution_success ts → body     : ${fmtDist(dist(afterSuccess))}  (ms-resolution ComfyUI timestamp)`,
      `workflow completed → this process's handle.result() resolves: ${fmtDist(dist(resultAfterWfDone))}`,
      `workflow completed → front's response headers          : ${fmtDist(dist(frontAfterWfDone))}`,
      ...floorLines,
      '',
      'after ComfyUI finished, p50 per segment (hook time, Temporal event times, client receive):',
      ...segmentMedians(tls).map((x) => `  ${x.segment.padEnd(44)} ${ms(x.p50).padStart(9)}`),
    ],
  };
}

/** Resolves with the epoch ms at which `result()` of `workflowId` returned here (retrying until it exists). */
async function watchResult(client: Client, workflowId: string, until: number): Promise<number | undefined> {
  while (Date.now() < until) {
    try {
      await client.workflow.getHandle(workflowId).result();
      return performance.timeOrigin + performance.now();
    } catch (e) {
      if ((e as Error).name !== 'WorkflowNotFoundError') return undefined;
      await new Promise((r) => setTimeout(r, 3));
    }
  }
  return undefined;
}
