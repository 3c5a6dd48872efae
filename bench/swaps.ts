/**
 * Fewer swaps, measured (issue 24, docs/llama-swap.md "Which render goes next"): one mixed workload run twice in
 * one sitting through the llama-swap stand-in with the guide's config, the fake ComfyUI charging model loads at the
 * box's costs scaled down, and an LLM stand-in asked at a steady pace:
 *
 * - `fifo`: GPU_DISPATCH_LOOKAHEAD=0, prompts start in the order Temporal hands them out (before this change);
 * - `grouped`: the guide's lookahead, the loaded model's renders first, none passed over longer than the bound.
 *
 * Prints, side by side: image model loads against the lower bound (one per model present), LLM <-> image swaps
 * (entry starts in the exclusive group), GPU idle time (the workload's span minus the time a prompt or an LLM
 * request ran), and p95 / max time to result of the renders and wait of the LLM requests.
 *
 *   npm run bench:swaps [-- --renders 30 --scale 0.1]
 *
 * Loopback only, ports from SWAPS_PORT_BASE (23400) upwards. Figures are comparisons within one run, never budgets.
 */
import { writeDummyLlm } from '../test/support/dummy-llm.ts';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { startFakeComfyUI, type FakeComfyUI } from '../tools/fake-comfyui/server.ts';
import { fakeStats, resetFake, setFaults } from '../test/faults/helpers.ts';
import { LlamaSwapStandin } from '../test/support/llama-swap-standin.ts';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const { values } = parseArgs({
  options: {
    renders: { type: 'string', default: '30' },
    /** Box seconds to bench seconds: 0.1 = one second per ten of the box. */
    scale: { type: 'string', default: '0.1' },
    lookahead: { type: 'string', default: '16' },
    'pass-over-ms': { type: 'string', default: '60000' },
    'slice-ms': { type: 'string', default: '20000' },
    'llm-every-ms': { type: 'string', default: '4000' },
  },
  strict: true,
});
const RENDERS = Number(values.renders);
const SCALE = Number(values.scale);
/** On the box: a swap between image models 10–33 s, a cold load 45 s–3 min; the middle of each. */
const LOAD = { warmMs: Math.round(20_000 * SCALE), coldMs: Math.round(90_000 * SCALE) };
/** The image models of the workload (distinct diffusion model files in the registry). */
const MODELS = ['imagegen-flux-dev', 'imagegen-flux-schnell', 'imagegen-qwen-image'];
const PORT_BASE = Number(process.env.SWAPS_PORT_BASE ?? 23_400);
const LEASE_TOKEN = 'bench-swaps-lease-secret';
const tmp = mkdtempSync(path.join(os.tmpdir(), 'cd-bench-swaps-'));

const say = (line: string): void => void process.stdout.write(`${line}\n`);

/** The workload: models in a fixed pseudo-random order (the same for both policies), arriving in three bursts. */
function workload(): Array<{ model: string; seed: number; at: number }> {
  let x = 2463534242;
  const rnd = (): number => ((x ^= x << 13), (x ^= x >>> 17), (x ^= x << 5), (x >>> 0) / 2 ** 32);
  return Array.from({ length: RENDERS }, (_, i) => ({
    model: MODELS[Math.floor(rnd() * MODELS.length)]!,
    seed: 1000 + i,
    at: Math.floor(i / (RENDERS / 3)) * 15_000,
  }));
}

interface Figures {
  loads: number;
  coldLoads: number;
  lowerBound: number;
  groupSwaps: number;
  idleMs: number;
  spanMs: number;
  renderP95: number;
  renderMax: number;
  llmP95: number;
  llmMax: number;
  llmCount: number;
  completedOnce: string;
}

const pct = (xs: number[], p: number): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(s.length * p))] ?? 0;
};

/** Total length of the union of [start, end] intervals. */
function covered(intervals: Array<[number, number]>): number {
  const s = [...intervals].sort((a, b) => a[0] - b[0]);
  let total = 0;
  let cur: [number, number] | undefined;
  for (const [a, b] of s) {
    if (!cur || a > cur[1]) {
      if (cur) total += cur[1] - cur[0];
      cur = [a, b];
    } else cur[1] = Math.max(cur[1], b);
  }
  return total + (cur ? cur[1] - cur[0] : 0);
}

// eslint-disable-next-line max-lines-per-function -- one policy's run read top to bottom (start, load, swaps, figures) over the fake and the clients it drives
async function runPolicy(name: string, lookahead: number, fake: FakeComfyUI, offset: number): Promise<Figures> {
  await resetFake(fake.url);
  await setFaults(fake.url, { modelLoad: LOAD });
  const [lsPort, frontPort, gpuPort, temporalPort, llmPort] = [0, 1, 2, 3, 4].map((i) => PORT_BASE + offset + i) as [number, number, number, number, number];
  const llm = writeDummyLlm(tmp, 300);
  const ls = new LlamaSwapStandin({
    config: readFileSync(path.join(root, 'docs', 'llama-swap.example.yaml'), 'utf8'),
    port: lsPort,
    macros: {
      comfy_durable: root,
      data_dir: path.join(tmp, `data-${name}`),
      comfyui_url: fake.url,
      llama_swap: `http://127.0.0.1:${lsPort}`,
      front_port: String(frontPort),
      gpu_port: String(gpuPort),
      temporal_port: String(temporalPort),
    },
    overrides: {
      'comfy-gpu': {
        env: [
          `GPU_LEASE_TOKEN=${LEASE_TOKEN}`,
          `GPU_DISPATCH_LOOKAHEAD=${lookahead}`,
          `GPU_MAX_PASS_OVER_MS=${values['pass-over-ms']}`,
          `GPU_LEASE_SLICE_MS=${values['slice-ms']}`,
          'SHUTDOWN_GRACE_MS=3000',
          'LOG_LEVEL=info',
        ],
      },
      'imagegen-flux-dev': { env: ['LOG_LEVEL=info', 'TEMPORAL_UI=false', `GPU_LEASE_TOKEN=${LEASE_TOKEN}`] },
      llm: { cmd: `${process.execPath} ${llm} ${llmPort}`, proxy: `http://127.0.0.1:${llmPort}`, checkEndpoint: '/health' },
    },
  });
  await ls.listen();
  try {
    await ls.waitFor((e) => e.type === 'ready' && e.model === 'imagegen-flux-dev');
    // Warm up: the GPU entry started once and the LLM loaded, so both runs start from the same state.
    await chat(ls.url);
    const mark = ls.events.length;
    const t0 = Date.now();
    let stop = false;
    const llmWaits: number[] = [];
    const llmLoop = (async () => {
      while (!stop) {
        const sent = Date.now();
        await chat(ls.url);
        llmWaits.push(Date.now() - sent - 300);
        await new Promise((r) => setTimeout(r, Math.max(0, Number(values['llm-every-ms']) - (Date.now() - sent))));
      }
    })();
    const jobs = workload();
    const renderMs: number[] = [];
    const statuses = await Promise.all(
      jobs.map(async (j) => {
        await new Promise((r) => setTimeout(r, j.at));
        const sent = Date.now();
        const res = await fetch(`${ls.url}/sdapi/v1/txt2img`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ model: j.model, prompt: 'a fox', steps: 4, width: 64, height: 64, seed: j.seed }),
        });
        await res.text();
        renderMs.push(Date.now() - sent);
        return res.status;
      }),
    );
    const t1 = Date.now();
    stop = true;
    await llmLoop;
    const stats = await fakeStats(fake.url);
    const events = ls.events.slice(mark);
    const llmBusy: Array<[number, number]> = [];
    let open: number | undefined;
    for (const e of events.filter((x) => x.model === 'llm' && (x.type === 'serve' || x.type === 'done'))) {
      if (e.type === 'serve') open ??= e.at;
      else if (open !== undefined) {
        llmBusy.push([open, e.at]);
        open = undefined;
      }
    }
    const runs = stats.runs.filter((r) => r.startedAt >= t0).map((r): [number, number] => [r.startedAt, r.endedAt ?? t1]);
    const clip = (xs: Array<[number, number]>): Array<[number, number]> => xs.map(([a, b]) => [Math.max(a, t0), Math.min(b, t1)]);
    const busy = covered(clip([...runs, ...llmBusy]));
    const outcomes = Object.values(stats.outcomes);
    const modelLoads = (stats as unknown as { modelLoads: Array<{ cold: boolean }> }).modelLoads;
    const ok = statuses.filter((s) => s === 200).length;
    return {
      loads: modelLoads.length,
      coldLoads: modelLoads.filter((l) => l.cold).length,
      lowerBound: new Set(jobs.map((j) => j.model)).size,
      groupSwaps: events.filter((e) => e.type === 'spawn' && (e.model === 'llm' || e.model === 'comfy-gpu')).length,
      idleMs: t1 - t0 - busy,
      spanMs: t1 - t0,
      renderP95: pct(renderMs, 0.95),
      renderMax: Math.max(...renderMs),
      llmP95: pct(llmWaits, 0.95),
      llmMax: Math.max(...llmWaits),
      llmCount: llmWaits.length,
      completedOnce: `${ok}/${jobs.length} answered 200, ${outcomes.filter((o) => o.filter((x) => x === 'success').length === 1).length}/${outcomes.length} prompts succeeded once`,
    };
  } finally {
    for (const id of ls.entries.keys()) writeFileSync(path.join(tmp, `${name}-${id}.log`), ls.output(id));
    await ls.close();
  }
}

function chat(url: string): Promise<number> {
  return fetch(`${url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'llm', messages: [{ role: 'user', content: 'hi' }] }),
  }).then(async (r) => (await r.text(), r.status));
}

async function main(): Promise<void> {
  const fake = await startFakeComfyUI({ port: PORT_BASE + 99, stepMs: 100 });
  const load = (): string =>
    os
      .loadavg()
      .map((l) => l.toFixed(1))
      .join(' ');
  say(
    `swaps: ${RENDERS} renders over ${MODELS.length} models in 3 bursts 15 s apart, an LLM request every ${values['llm-every-ms']} ms; loads ${LOAD.warmMs} ms (swap) / ${LOAD.coldMs} ms (cold), ` +
      `slice ${values['slice-ms']} ms, lookahead ${values.lookahead}, pass-over bound ${values['pass-over-ms']} ms; logs in ${tmp}; load ${load()}`,
  );
  try {
    const fifo = await runPolicy('fifo', 0, fake, 0);
    say(`fifo done (load ${load()})`);
    const grouped = await runPolicy('grouped', Number(values.lookahead), fake, 10);
    say(`grouped done (load ${load()})`);
    const s = (ms: number): string => `${(ms / 1000).toFixed(1)} s`;
    const rows: Array<[string, (f: Figures) => string]> = [
      ['image model loads (lower bound)', (f) => `${f.loads} (${f.lowerBound}), ${f.coldLoads} cold`],
      ['LLM <-> image swaps', (f) => `${f.groupSwaps}`],
      ['GPU idle / span', (f) => `${s(f.idleMs)} / ${s(f.spanMs)}`],
      ['render time to result p95 / max', (f) => `${s(f.renderP95)} / ${s(f.renderMax)}`],
      ['LLM wait p95 / max (n)', (f) => `${s(f.llmP95)} / ${s(f.llmMax)} (${f.llmCount})`],
      ['renders', (f) => f.completedOnce],
    ];
    say(`\n| | fifo | grouped | grouped / fifo |\n|---|---|---|---|`);
    const ratio: Record<string, (a: Figures, b: Figures) => string> = {
      'image model loads (lower bound)': (a, b) => (b.loads / a.loads).toFixed(2),
      'LLM <-> image swaps': (a, b) => (a.groupSwaps ? (b.groupSwaps / a.groupSwaps).toFixed(2) : '-'),
      'GPU idle / span': (a, b) => (b.idleMs / a.idleMs).toFixed(2),
      'render time to result p95 / max': (a, b) => (b.renderP95 / a.renderP95).toFixed(2),
      'LLM wait p95 / max (n)': (a, b) => (a.llmP95 > 0 ? (b.llmP95 / a.llmP95).toFixed(2) : '-'),
    };
    for (const [label, f] of rows) say(`| ${label} | ${f(fifo)} | ${f(grouped)} | ${ratio[label]?.(fifo, grouped) ?? ''} |`);
    const verdict = grouped.loads < fifo.loads && grouped.renderP95 <= fifo.renderP95 ? 'FEWER SWAPS, p95 not worse' : 'NOT BETTER';
    say(`\nverdict: ${verdict} (load ${load()})`);
  } finally {
    await fake.close();
  }
}

await main();
