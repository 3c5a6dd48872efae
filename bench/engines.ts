/**
 * Engine benchmark: the same requests rendered with engine=comfyui and engine=sglang on one ComfyUI that has
 * SGLang's plugin and both engines' model files (bench/ENGINES.md says how to set one up).
 *
 *   npx tsx bench/engines.ts --url http://127.0.0.1:8188 [--models flux-dev,qwen-image,h3] [--runs 3]
 *       [--seed 1234] [--models-config models.json] [--out DIR]
 *   npx tsx bench/engines.ts --dry-run      CPU: a fake ComfyUI with the plugin's recorded nodes; graph build
 *                                           and submit only, figures meaningless
 *
 * Per model and engine: one warm-up render (model load, SGLang worker start; not timed), then `--runs`
 * renders with seeds seed, seed+1, ... — the same seeds on both engines. Time is ComfyUI's own (history
 * execution_start → execution_success). Prints per model the median time of each engine, the ratio, and per
 * seed the output check: the sglang image is not noise, and it is close to the comfyui one.
 */
import { randomUUID } from 'node:crypto';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { ComfyClient } from '../src/comfyui/client.ts';
import type { ComfyGraph } from '../src/comfyui/graph.ts';
import { submitAndFollow } from '../src/comfyui/submit-and-follow.ts';
import { planRender } from '../src/models/plan.ts';
import { applyModelOverrides, getProfile, parseModelOverrides, resetModelOverrides, type ModelOverrides } from '../src/models/registry.ts';
import { defaultVideoSpec } from '../src/models/video.ts';
import type { RenderRequest, SampledRender } from '../src/contracts/render.ts';
import { CLOSE_MIN, greyFromPng, noiseScore, NOT_NOISE_MAX, similarity, type Grey } from './lib/image-check.ts';
import { firstVideoFrame } from './lib/video-frame.ts';

/** The two engines this benchmark compares (engine ids are open: src/models/engines/<id>/). */
type Engine = 'comfyui' | 'sglang';
export const ENGINES: readonly Engine[] = ['comfyui', 'sglang'];
/** Short names → profile ids. */
export const BENCH_MODELS: Record<string, string> = { 'flux-dev': 'imagegen-flux-dev', 'qwen-image': 'imagegen-qwen-image', h3: 'videogen-minimax-h3' };

export interface EngineBenchOptions {
  url: string;
  models: string[];
  runs: number;
  seed: number;
  /** The operator's MODELS_CONFIG (file names, sglang options); the engine is set on top of it. */
  overrides?: ModelOverrides;
  /** Small sizes and step counts: the CPU dry run against a fake. */
  dryRun?: boolean;
  /** Save every output here, for a look by eye. */
  outDir?: string;
  write?: (line: string) => void;
}

export interface RunResult {
  seed: number;
  ms: number;
  graph: ComfyGraph;
  output: Buffer;
  file: string;
}

export interface ModelResult {
  model: string;
  runs: Record<Engine, RunResult[]>;
  medianMs: Record<Engine, number>;
  /** comfyui time / sglang time: above 1 = sglang faster. */
  ratio: number;
  checks: Array<{ seed: number; noise: number; similarity: number; ok: boolean }>;
}

function requestFor(modelId: string, seed: number, dryRun: boolean): RenderRequest {
  const p = getProfile(modelId);
  if (!p) throw new Error(`unknown model ${modelId}`);
  const d = p.defaults;
  const video = p.kinds.includes('video');
  // The figures asked for: Flux-dev 1024² 20 steps; Qwen-Image 1024² at its default 40 steps; H3 at its defaults.
  const side = dryRun ? 256 : 1024;
  const sampled: SampledRender = {
    model: modelId,
    prompt: 'a lighthouse on a rocky cliff at dusk, waves crashing below, warm light in the windows',
    negativePrompt: p.cfgMode === 'free' ? 'blurry, low quality' : '',
    seed,
    steps: dryRun ? 2 : d.steps,
    cfg: d.cfg,
    sampler: d.sampler,
    scheduler: d.scheduler,
    width: video ? (dryRun ? 256 : d.width) : side,
    height: video ? (dryRun ? 160 : d.height) : side,
    batchSize: 1,
    nIter: 1,
  };
  if (video) return { ...sampled, kind: 'video', video: { ...defaultVideoSpec(p), task: 't2va', ...(dryRun ? { frames: 5 } : {}) } };
  return {
    ...sampled,
    kind: 'txt2img',
    ...(d.guidance !== undefined ? { guidance: d.guidance } : {}),
    denoise: 1,
    extraImages: [],
    report: { samplerName: d.sampler, scheduler: d.scheduler, requestedWidth: side, requestedHeight: side },
  };
}

/** Builds the graph of `modelId` on `engine`: the operator's overrides with the engine laid over them. */
export function graphFor(modelId: string, engine: Engine, seed: number, opts: Pick<EngineBenchOptions, 'overrides' | 'dryRun'>): ComfyGraph {
  const base = opts.overrides ?? {};
  applyModelOverrides({ ...base, [modelId]: { ...base[modelId], engine } });
  try {
    return planRender(requestFor(modelId, seed, opts.dryRun ?? false), { renderId: `bench-engines-${engine}-${randomUUID()}` }).items[0]!.graph;
  } finally {
    resetModelOverrides();
  }
}

async function render(client: ComfyClient, graph: ComfyGraph, seed: number): Promise<RunResult> {
  const t0 = Date.now();
  const r = await submitAndFollow(client, { graph, promptId: randomUUID(), stallTimeoutMs: 20 * 60_000, pollIntervalMs: 2_000 });
  const wall = Date.now() - t0;
  const file = r.files[0];
  if (!file) throw new Error('the render produced no output file');
  const { data } = await client.view(file);
  const ms = r.startedAt !== undefined && r.finishedAt !== undefined ? r.finishedAt - r.startedAt : wall;
  return { seed, ms, graph, output: data, file: file.filename };
}

async function grey(run: RunResult): Promise<Grey> {
  return greyFromPng(run.file.toLowerCase().endsWith('.mp4') ? await firstVideoFrame(run.output) : run.output);
}

const median = (xs: number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length === 0 ? NaN : s.length % 2 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
};

export async function runEngineBench(opts: EngineBenchOptions): Promise<ModelResult[]> {
  const write = opts.write ?? ((l: string) => process.stdout.write(`${l}\n`));
  const client = new ComfyClient({ baseUrl: opts.url });
  const results: ModelResult[] = [];
  try {
    for (const short of opts.models) {
      const model = BENCH_MODELS[short] ?? short;
      const runs = { comfyui: [], sglang: [] } as Record<Engine, RunResult[]>;
      for (const engine of ENGINES) {
        write(`${model} engine=${engine}: warm-up`);
        await render(client, graphFor(model, engine, opts.seed + 1000, opts), opts.seed + 1000);
        for (let i = 0; i < opts.runs; i++) {
          const seed = opts.seed + i;
          const r = await render(client, graphFor(model, engine, seed, opts), seed);
          runs[engine].push(r);
          write(`${model} engine=${engine} seed=${seed}: ${(r.ms / 1000).toFixed(2)} s`);
          if (opts.outDir) {
            mkdirSync(opts.outDir, { recursive: true });
            writeFileSync(path.join(opts.outDir, `${short}-${engine}-${seed}${path.extname(r.file)}`), r.output);
          }
        }
        // The other engine's weights must not share the GPU with this one's.
        await client.free({ unloadModels: true, freeMemory: true });
      }
      const checks = [];
      for (let i = 0; i < opts.runs; i++) {
        const a = await grey(runs.comfyui[i]!);
        const b = await grey(runs.sglang[i]!);
        const noise = noiseScore(b);
        const sim = similarity(a, b);
        checks.push({ seed: runs.sglang[i]!.seed, noise, similarity: sim, ok: noise <= NOT_NOISE_MAX && sim >= CLOSE_MIN });
      }
      const medianMs = { comfyui: median(runs.comfyui.map((r) => r.ms)), sglang: median(runs.sglang.map((r) => r.ms)) };
      results.push({ model, runs, medianMs, ratio: medianMs.comfyui / medianMs.sglang, checks });
    }
  } finally {
    await client.close();
  }
  write('');
  write('model                  comfyui (median)  sglang (median)  ratio (comfyui/sglang)');
  for (const r of results) {
    write(
      `${r.model.padEnd(22)} ${`${(r.medianMs.comfyui / 1000).toFixed(2)} s`.padStart(16)}  ${`${(r.medianMs.sglang / 1000).toFixed(2)} s`.padStart(15)}  ${r.ratio.toFixed(2)}×`,
    );
    for (const c of r.checks) {
      write(
        `  seed ${c.seed}: sglang noise score ${c.noise.toFixed(2)} (not noise ≤ ${NOT_NOISE_MAX}), similarity to comfyui ${c.similarity.toFixed(2)} (close ≥ ${CLOSE_MIN}): ${c.ok ? 'PASS' : 'CHECK'}`,
      );
    }
  }
  return results;
}

async function main(): Promise<number> {
  const { values } = parseArgs({
    options: {
      url: { type: 'string' },
      models: { type: 'string', default: 'flux-dev,qwen-image,h3' },
      runs: { type: 'string', default: '3' },
      seed: { type: 'string', default: '1234' },
      'models-config': { type: 'string' },
      out: { type: 'string' },
      'dry-run': { type: 'boolean', default: false },
      help: { type: 'boolean', short: 'h' },
    },
    strict: true,
  });
  if (values.help) {
    process.stdout.write(
      'usage: tsx bench/engines.ts --url <comfyui> [--models flux-dev,qwen-image,h3] [--runs 3] [--seed 1234] [--models-config FILE] [--out DIR] | --dry-run\n',
    );
    return 0;
  }
  const configPath = values['models-config'] ?? process.env.MODELS_CONFIG;
  const overrides = configPath ? parseModelOverrides(JSON.parse(readFileSync(configPath, 'utf8')), configPath) : undefined;
  const common = {
    models: values.models
      .split(',')
      .map((s) => s.trim())
      .filter(Boolean),
    seed: Number(values.seed),
    ...(overrides ? { overrides } : {}),
    ...(values.out ? { outDir: values.out } : {}),
  };
  if (values['dry-run']) {
    const { startFakeComfyUI } = await import('../tools/fake-comfyui/server.ts');
    const fake = await startFakeComfyUI({ port: 0, sgldPlugin: true });
    try {
      process.stdout.write('dry run against a fake ComfyUI with the SGLang plugin nodes: figures are meaningless\n');
      await runEngineBench({ ...common, url: fake.url, runs: 1, dryRun: true });
    } finally {
      await fake.close();
    }
    return 0;
  }
  const url = values.url ?? process.env.COMFYUI_URL;
  if (!url) {
    process.stderr.write('--url (or COMFYUI_URL) is required unless --dry-run\n');
    return 2;
  }
  await runEngineBench({ ...common, url, runs: Math.max(1, Number(values.runs)) });
  return 0;
}

if (import.meta.url === `file://${process.argv[1]}`) process.exitCode = await main();
