/**
 * Golden graphs of the sglang engine (SGLang's ComfyUI plugin, integrated mode) for every family it runs:
 * Flux (dev, schnell), Qwen-Image, Qwen-Image-Edit and MiniMax-H3. Compared with
 * `test/golden/sglang/<model>-<case>.json` (UPDATE_GOLDEN=1 rewrites), validated node by node against the
 * recorded `/object_info` with the plugin's recorded node classes merged in (tools/fake-comfyui/fixtures/
 * sglang-object_info.json, as the fake serves it with the plugin on), and passed by the client's pre-submit
 * check. Without the plugin, the same graphs are refused naming it. The engine changes the loaders only:
 * every other node is the default engine's.
 */
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ComfyValidationError } from '../../src/comfyui/errors.ts';
import type { ComfyGraph } from '../../src/comfyui/graph.ts';
import { comfyErrorBodySchema } from '../../src/comfyui/schemas.ts';
import { objectInfoSchema } from '../../src/comfyui/object-info.ts';
import { preflightGraph } from '../../src/comfyui/preflight.ts';
import { normalizeRequest } from '../../src/api/a1111/normalize.ts';
import { loadRawObjectInfo } from '../../tools/fake-comfyui/fixture.ts';
import { withSgldPlugin } from '../../tools/fake-comfyui/sgld-plugin.ts';
import { planRender } from '../../src/models/plan.ts';
import { applyModelOverrides, getProfile, resetModelOverrides } from '../../src/models/registry.ts';
import { defaultVideoSpec } from '../../src/models/video.ts';
import type { BlobRef, RenderRequest, VideoSpec } from '../../src/contracts/render.ts';
import { ctx, makePng, makePngWith } from './helpers.ts';
import { schemaProblems } from './schema-check.ts';

const here = dirname(fileURLToPath(import.meta.url));
const withPlugin = objectInfoSchema.parse(withSgldPlugin(loadRawObjectInfo()));
const withoutPlugin = objectInfoSchema.parse(loadRawObjectInfo());

/** The models the sglang engine runs, switched to it through the overrides file as an operator would. */
export const SGLANG_MODELS = ['imagegen-flux-dev', 'imagegen-flux-schnell', 'imagegen-qwen-image', 'imagegen-qwen-image-edit', 'videogen-minimax-h3'];
const toSglang = Object.fromEntries(SGLANG_MODELS.map((id) => [id, { engine: 'sglang' }]));

const b64 = (b: Buffer) => b.toString('base64');
const init = b64(makePng(96, 64, [200, 120, 40, 255]));
const mask = b64(makePngWith(96, 64, (x) => (x < 48 ? [255, 255, 255, 255] : [0, 0, 0, 255])));
const refs = [b64(makePng(64, 64, [255, 0, 0, 255])), b64(makePng(80, 48, [0, 255, 0, 255])), b64(makePng(48, 80, [0, 0, 255, 255]))];
const base = { prompt: 'a lighthouse on a cliff at dusk', negative_prompt: 'blurry, low quality', seed: 1234, width: 768, height: 512 };
const instruction = { ...base, prompt: 'make the sky stormy', negative_prompt: '' };
const catalog = { loras: ['style/detail-tweaker.safetensors', 'film-grain.safetensors'], upscaleModels: [] };

const a1111 = (route: 'txt2img' | 'img2img', body: Record<string, unknown>) => (): RenderRequest =>
  normalizeRequest(route, body, { ...ctx(), catalog }).request;

const blob = (n: number): BlobRef => ({ sha256: String(n).repeat(64).slice(0, 64), size: 100, mime: 'image/png', width: 640, height: 384 });
const H3 = 'videogen-minimax-h3';
const h3 = (video: Partial<VideoSpec>) => (): RenderRequest => {
  const p = getProfile(H3)!;
  const d = p.defaults;
  return {
    kind: 'video',
    model: H3,
    prompt: 'a lighthouse on a cliff at dusk, waves crashing',
    negativePrompt: '',
    seed: 1234,
    steps: d.steps,
    cfg: d.cfg,
    sampler: d.sampler,
    scheduler: d.scheduler,
    width: 640,
    height: 384,
    batchSize: 1,
    nIter: 1,
    video: { ...defaultVideoSpec(p), ...video },
  };
};

/** Name → request; the default engine's golden graph of the same name is `<name>.json`. */
const cases: Array<[string, () => RenderRequest]> = [];
for (const model of ['imagegen-flux-dev', 'imagegen-flux-schnell', 'imagegen-qwen-image']) {
  cases.push([`${model}-txt2img`, a1111('txt2img', { ...base, model })]);
  cases.push([`${model}-img2img`, a1111('img2img', { ...base, model, init_images: [init], denoising_strength: 0.6 })]);
  cases.push([`${model}-inpaint`, a1111('img2img', { ...base, model, init_images: [init], mask, denoising_strength: 0.9 })]);
}
for (const model of ['imagegen-flux-dev', 'imagegen-qwen-image']) {
  cases.push([`${model}-txt2img-lora`, a1111('txt2img', { ...base, model, prompt: 'a lighthouse <lora:detail-tweaker:0.7>, dusk' })]);
}
for (const n of [1, 3]) {
  cases.push([`imagegen-qwen-image-edit-edit-${n}ref`, a1111('txt2img', { ...instruction, model: 'imagegen-qwen-image-edit', extra_images: refs.slice(0, n) })]);
}
cases.push(['imagegen-qwen-image-edit-txt2img', a1111('txt2img', { ...base, model: 'imagegen-qwen-image-edit' })]);
cases.push([`${H3}-t2va`, h3({ task: 't2va', frames: 124 })]);
cases.push([`${H3}-fl2va-first-last`, h3({ task: 'fl2va', frames: 124, firstFrame: blob(1), lastFrame: blob(2), shift: 12, audioShift: 3 })]);
cases.push([`${H3}-ref2va`, h3({ task: 'ref2va', frames: 124, references: [blob(1), blob(2), blob(3)] })]);

const graphOf = (req: RenderRequest): ComfyGraph => {
  const plan = planRender(req, { renderId: 'render-golden' });
  expect(plan.items).toHaveLength(1);
  return plan.items[0]!.graph;
};

/** The graph with the engine's own nodes (loaders, options, LoRA) removed: what both engines must share. */
function engineFree(g: ComfyGraph): ComfyGraph {
  const drop = new Set(['unet', 'sgld_options', ...Object.keys(g).filter((id) => /^lora_\d+$/.test(id))]);
  const out: ComfyGraph = {};
  for (const [id, n] of Object.entries(g)) {
    if (drop.has(id)) continue;
    const inputs = Object.fromEntries(
      Object.entries(n.inputs).map(([k, v]) => [k, Array.isArray(v) && typeof v[0] === 'string' && drop.has(v[0]) ? ['(model)', 0] : v]),
    );
    out[id] = { ...n, inputs } as ComfyGraph[string];
  }
  return out;
}

describe('golden graphs, sglang engine', () => {
  beforeAll(() => applyModelOverrides(toSglang));
  afterAll(() => resetModelOverrides());

  it.each(cases)('%s', (name, request) => {
    const g = graphOf(request());
    expect(schemaProblems(g, withPlugin)).toEqual([]);
    expect(preflightGraph(g, withPlugin)).toEqual({ ok: true });

    const file = join(here, `sglang/${name}.json`);
    const text = `${JSON.stringify(g, null, 2)}\n`;
    if (process.env.UPDATE_GOLDEN === '1') writeFileSync(file, text);
    expect(existsSync(file), `${file} missing: run with UPDATE_GOLDEN=1`).toBe(true);
    expect(text).toBe(readFileSync(file, 'utf8'));

    // No ComfyUI-native diffusion loader or LoRA loader is left; the DiT comes from SGLDUNETLoader fed by SGLDOptions.
    const classes = Object.values(g).map((n) => n.class_type);
    for (const cls of ['UNETLoader', 'UnetLoaderGGUF', 'LoraLoader', 'LoraLoaderModelOnly']) expect(classes).not.toContain(cls);
    expect(g.unet).toMatchObject({ class_type: 'SGLDUNETLoader', inputs: { weight_dtype: 'default', sgld_options: ['sgld_options', 0] } });
    expect(g.sgld_options!.class_type).toBe('SGLDOptions');

    // Without the plugin the pre-submit check refuses the graph, naming the plugin and why it may be missing.
    const refused = preflightGraph(g, withoutPlugin);
    expect(refused.ok).toBe(false);
    if (!refused.ok) {
      expect(refused.error.type).toBe('missing_node_type');
      expect(refused.problems[0]!.message).toMatch(/ComfyUI_SGLDiffusion/);
      expect(refused.problems[0]!.message).toMatch(/sglang/);
    }
  });

  it('the engine changes the loaders only: every other node equals the default engine graph', () => {
    const sglang = new Map(cases.map(([name, req]) => [name, graphOf(req())]));
    resetModelOverrides();
    try {
      for (const [name, req] of cases) {
        if (name.endsWith('-lora')) continue;
        expect(engineFree(sglang.get(name)!), name).toEqual(engineFree(graphOf(req())));
      }
    } finally {
      applyModelOverrides(toSglang);
    }
  });

  it('files: safetensors checkpoints for Flux and Qwen, the H3 GGUF per mode; runtime options per family', () => {
    const unet = (name: string) => graphOf(cases.find((c) => c[0] === name)![1]()).unet!.inputs.unet_name;
    expect(unet('imagegen-flux-dev-txt2img')).toBe('flux1-dev.safetensors');
    expect(unet('imagegen-flux-schnell-txt2img')).toBe('flux1-schnell.safetensors');
    expect(unet('imagegen-qwen-image-txt2img')).toBe('qwen_image_bf16.safetensors');
    expect(unet('imagegen-qwen-image-edit-edit-1ref')).toBe('qwen_image_edit_2509_bf16.safetensors');
    expect(unet(`${H3}-t2va`)).toBe('minimax_h3_fl2va-Q8_0.gguf');
    expect(unet(`${H3}-ref2va`)).toBe('minimax_h3_ref2va-Q8_0.gguf');
    const options = (name: string) => graphOf(cases.find((c) => c[0] === name)![1]()).sgld_options!.inputs;
    expect(options('imagegen-qwen-image-edit-txt2img')).toEqual({ model_type: 'qwen_image_edit' });
    expect(options(`${H3}-t2va`)).toEqual({ model_type: 'minimax_h3' });
  });

  it('a LoRA goes through SGLDLoraLoader on the DiT; the text encoder is not patched', () => {
    const g = graphOf(cases.find((c) => c[0] === 'imagegen-qwen-image-txt2img-lora')![1]());
    expect(g.lora_1).toMatchObject({
      class_type: 'SGLDLoraLoader',
      inputs: { model: ['model_sampling', 0], lora_name: 'style/detail-tweaker.safetensors', strength_model: 0.7, nickname: 'detail-tweaker', target: 'all' },
    });
    expect(g.sampler!.inputs.model).toEqual(['lora_1', 0]);
    expect(g.positive!.inputs.clip).toEqual(['clip', 0]);
  });

  it('two LoRAs are refused: the plugin keeps only the last one of a chain', () => {
    const req = a1111('txt2img', { ...base, model: 'imagegen-flux-dev', prompt: 'x <lora:detail-tweaker:0.7> <lora:film-grain:0.4>' })();
    expect(() => graphOf(req)).toThrow(/sglang engine, which applies one LoRA per image; got 2/);
  });

  it('runtime options from the overrides file reach SGLDOptions for that model only', () => {
    applyModelOverrides({
      ...toSglang,
      'imagegen-flux-dev': { engine: 'sglang', sglang: { options: { num_gpus: 2, tp_size: 1, sp_degree: 2, attention_backend: 'sage_attn', enable_torch_compile: true } } },
    });
    try {
      const flux = graphOf(cases.find((c) => c[0] === 'imagegen-flux-dev-txt2img')![1]());
      expect(flux.sgld_options!.inputs).toEqual({ model_type: 'flux', num_gpus: 2, tp_size: 1, sp_degree: 2, attention_backend: 'sage_attn', enable_torch_compile: true });
      expect(schemaProblems(flux, withPlugin)).toEqual([]);
      const schnell = graphOf(cases.find((c) => c[0] === 'imagegen-flux-schnell-txt2img')![1]());
      expect(schnell.sgld_options!.inputs).toEqual({ model_type: 'flux' });
    } finally {
      applyModelOverrides(toSglang);
    }
  });
});

/**
 * What a real ComfyUI 0.33.0 answered to these graphs (scripts/record-golden-verdicts.ts --sglang): with
 * SGLang's plugin registered, and without it.
 */
describe('sglang golden graphs against the real ComfyUI', () => {
  type Verdict = { status: number; response: { node_errors?: unknown; error?: unknown } };
  const real = JSON.parse(readFileSync(join(here, '../fixtures/real-comfyui/sglang-golden-real.json'), 'utf8')) as Record<'plugin' | 'no-plugin', Record<string, Verdict>>;
  const goldens = readdirSync(join(here, 'sglang')).filter((f) => f.endsWith('.json')).sort();
  const graph = (f: string): ComfyGraph => JSON.parse(readFileSync(join(here, 'sglang', f), 'utf8')) as ComfyGraph;

  it('every golden graph has both verdicts', () => {
    expect(goldens.length).toBe(cases.length);
    expect(Object.keys(real.plugin).sort()).toEqual(goldens);
    expect(Object.keys(real['no-plugin']).sort()).toEqual(goldens);
  });

  it.each(goldens)('%s: accepted with the plugin; without it refused as the client refuses it, naming the plugin', (f) => {
    expect(real.plugin[f]).toMatchObject({ status: 200, response: { node_errors: {} } });
    expect(preflightGraph(graph(f), withPlugin)).toEqual({ ok: true });

    const refused = real['no-plugin'][f]!;
    expect(refused.status).toBe(400);
    const error = comfyErrorBodySchema.parse(refused.response.error);
    expect(error.type).toBe('missing_node_type');
    const ours = preflightGraph(graph(f), withoutPlugin);
    expect(ours.ok).toBe(false);
    if (!ours.ok) expect(ours.problems[0]!.nodeId).toBe(error.extra_info.node_id);
    // The same answer reaching the client at submit time: non-retryable, naming the plugin and the cause.
    const e = new ComfyValidationError({ status: 400, error, nodeErrors: {} });
    expect(e.retryable).toBe(false);
    expect(e.message).toMatch(/ComfyUI_SGLDiffusion.*likely cause: .*`sglang` package/);
    expect(e.details()).toMatchObject({ customNodes: 'ComfyUI_SGLDiffusion' });
  });
});
