/**
 * Shared pieces of the fault suite: the scenario wrapper that prints `fault: <scenario>: ok|FAIL (<ms>)`,
 * fake-ComfyUI controls and the "rendered exactly once" assertions.
 */
import { inspect } from 'node:util';
import { expect, it } from 'vitest';
import type { FaultsBody } from '../../tools/fake-comfyui/faults.ts';
import type { FakeStatsSnapshot } from '../../tools/fake-comfyui/state.ts';

/**
 * One fault scenario = one test, printing one line with its outcome and duration. The timeout is enforced
 * here (below vitest's), so a hanging scenario still prints its FAIL line before vitest gives up on it.
 */
export function scenario(name: string, fn: () => Promise<void>, timeoutMs = 60_000): void {
  it(
    name,
    async () => {
      const t0 = Date.now();
      let timer: NodeJS.Timeout | undefined;
      try {
        await Promise.race([
          fn(),
          new Promise<never>((_, reject) => {
            timer = setTimeout(() => reject(new Error(`scenario "${name}" did not finish within ${timeoutMs} ms`)), timeoutMs);
          }),
        ]);
        process.stdout.write(`fault: ${name}: ok (${Date.now() - t0} ms)\n`);
      } catch (err) {
        process.stdout.write(`fault: ${name}: FAIL (${Date.now() - t0} ms)\n`);
        throw err;
      } finally {
        clearTimeout(timer);
      }
    },
    timeoutMs + 5_000,
  );
}

export async function setFaults(fakeUrl: string, faults: FaultsBody): Promise<void> {
  const res = await fetch(`${fakeUrl}/__fake/faults`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(faults) });
  if (!res.ok) throw new Error(`setting faults failed: ${res.status} ${await res.text()}`);
}

export async function resetFake(fakeUrl: string): Promise<void> {
  const res = await fetch(`${fakeUrl}/__fake/reset`, { method: 'POST' });
  if (!res.ok) throw new Error(`fake reset failed: ${res.status}`);
}

export async function fakeStats(fakeUrl: string): Promise<FakeStatsSnapshot> {
  return (await (await fetch(`${fakeUrl}/__fake/stats`)).json()) as FakeStatsSnapshot;
}

export async function waitFor<T>(
  what: string,
  fn: () => Promise<T | undefined | false> | T | undefined | false,
  timeoutMs = 30_000,
  everyMs = 100,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let lastErr: unknown;
  for (;;) {
    try {
      const v = await fn();
      if (v !== undefined && v !== false) return v;
    } catch (err) {
      lastErr = err;
    }
    if (Date.now() > deadline)
      throw new Error(
        `timed out after ${timeoutMs} ms waiting for ${what}${lastErr ? `: ${lastErr instanceof Error ? String(lastErr) : inspect(lastErr)}` : ''}`,
      );
    await new Promise((r) => setTimeout(r, everyMs));
  }
}

/** Resolves with the id of the first prompt the fake is running. */
export function waitRunning(fakeUrl: string, timeoutMs = 30_000): Promise<string> {
  return waitFor('a prompt running on the fake ComfyUI', async () => (await fakeStats(fakeUrl)).queue.running[0], timeoutMs, 50);
}

/** Resolves once the running prompt has executed at least `n` sampler steps worth of nodes (any progress). */
export async function waitProgress(fakeUrl: string, promptId: string, nodes: number, timeoutMs = 30_000): Promise<void> {
  await waitFor(
    `prompt ${promptId} to execute ${nodes} node(s)`,
    async () => ((await fakeStats(fakeUrl)).nodesExecuted[promptId] ?? 0) >= nodes,
    timeoutMs,
    50,
  );
}

export interface RenderCall {
  status: number;
  json: Record<string, unknown> & { images?: string[]; info?: string; error?: string; detail?: string };
  renderId: string | null;
}

export async function a1111(
  baseUrl: string,
  route: 'txt2img' | 'img2img',
  body: unknown,
  init: { key?: string; signal?: AbortSignal } = {},
): Promise<RenderCall> {
  const headers: Record<string, string> = { 'content-type': 'application/json' };
  if (init.key) headers['idempotency-key'] = init.key;
  const res = await fetch(`${baseUrl}/sdapi/v1/${route}`, {
    method: 'POST',
    headers,
    body: JSON.stringify(body),
    ...(init.signal ? { signal: init.signal } : {}),
  });
  const text = await res.text();
  let json: RenderCall['json'];
  try {
    json = JSON.parse(text) as RenderCall['json'];
  } catch {
    json = { raw: text };
  }
  return { status: res.status, json, renderId: res.headers.get('x-render-id') };
}

/**
 * The render's one item executed exactly once successfully, and no prompt id ever ran twice. With
 * `prompts`, also the exact number of prompts submitted (1 = no retry at all, e.g. slow-but-alive).
 */
export function expectRenderedOnce(stats: FakeStatsSnapshot | FakeStatsSnapshot[], opts: { prompts?: number } = {}): void {
  const all = Array.isArray(stats) ? stats : [stats];
  const executions: Record<string, number> = {};
  const successes: string[] = [];
  const submitted = new Set<string>();
  for (const s of all) {
    for (const [id, n] of Object.entries(s.executions)) executions[id] = (executions[id] ?? 0) + n;
    for (const [id, n] of Object.entries(s.submissions)) {
      expect(n, `prompt ${id} was submitted ${n} times`).toBe(1);
      submitted.add(id);
    }
    for (const [id, outcomes] of Object.entries(s.outcomes)) for (const o of outcomes) if (o === 'success') successes.push(id);
  }
  for (const [id, n] of Object.entries(executions)) expect(n, `prompt ${id} executed ${n} times`).toBeLessThanOrEqual(1);
  expect(successes, `successful executions: ${JSON.stringify(successes)}`).toHaveLength(1);
  if (opts.prompts !== undefined) expect([...submitted], 'prompts submitted').toHaveLength(opts.prompts);
}

/** A Prometheus sample's value from a text exposition, or undefined. `labels` must match exactly. */
export function metricValue(text: string, name: string, labels: Record<string, string> = {}): number | undefined {
  const want = Object.entries(labels)
    .map(([k, v]) => `${k}="${v}"`)
    .sort()
    .join(',');
  for (const line of text.split('\n')) {
    if (!line.startsWith(name)) continue;
    const m = /^([a-zA-Z_:][\w:]*)(?:\{([^}]*)\})? (\S+)$/.exec(line);
    if (!m || m[1] !== name) continue;
    const got = (m[2] ?? '').split(',').filter(Boolean).sort().join(',');
    if (got === want) return Number(m[3]);
  }
  return undefined;
}

export const SCHNELL = { model: 'imagegen-flux-schnell', width: 128, height: 128 } as const;
