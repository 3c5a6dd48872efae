/**
 * Golden graphs of control units (`request.controls`): Flux's union ControlNet and Redux image prompt, Qwen's
 * DiffSynth model patches, as the family builders build them from the neutral request (the A1111 units are a
 * front's to map). Checked like the other golden graphs (structure, the recorded /object_info's schemas, the
 * client's pre-submit check, byte-equal golden files; UPDATE_GOLDEN=1 rewrites them). The real ComfyUI 0.33.0
 * accepted each (golden-real.json) and executed the Flux ones with tiny weights
 * (test/fixtures/real-comfyui/execution-controlnet-*.json).
 */
import { createHash } from 'node:crypto';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import type { ComfyGraph } from '../../src/comfyui/graph.ts';
import { objectInfoSchema } from '../../src/comfyui/object-info.ts';
import { preflightGraph } from '../../src/comfyui/preflight.ts';
import { normalizeRequest } from '../../src/api/a1111/normalize.ts';
import { controlUnsupported, UnsupportedControlError } from '../../src/models/families/controls.ts';
import { planRender } from '../../src/models/plan.ts';
import { getProfile } from '../../src/models/registry.ts';
import type { BlobRef, ControlUnit, ImageRender, RenderRequest } from '../../src/contracts/render.ts';
import { OBJECT_INFO_FIXTURE_URL } from '../../tools/fake-comfyui/fixture.ts';
import { ctx, makePngWith } from './helpers.ts';
import { schemaProblems } from './schema-check.ts';

const here = dirname(fileURLToPath(import.meta.url));
const objectInfo = objectInfoSchema.parse(JSON.parse(readFileSync(OBJECT_INFO_FIXTURE_URL, 'utf8')));

function blob(png: Buffer, width: number, height: number): BlobRef {
  return { sha256: createHash('sha256').update(png).digest('hex'), size: png.length, mime: 'image/png', width, height };
}
/** A white disc on black (an edge map's worth of edges) and a horizontal ramp (a depth map's worth). */
const disc = blob(
  makePngWith(96, 64, (x, y) => ((x - 48) ** 2 + (y - 32) ** 2 < 400 ? [255, 255, 255, 255] : [0, 0, 0, 255])),
  96,
  64,
);
const ramp = blob(
  makePngWith(96, 64, (x) => [x * 2, x * 2, x * 2, 255]),
  96,
  64,
);
const reference = blob(
  makePngWith(64, 64, (x, y) => [x * 4, y * 4, 128, 255]),
  64,
  64,
);

const base = { prompt: 'a lighthouse on a cliff at dusk', negative_prompt: 'blurry, low quality', seed: 1234, width: 768, height: 512 };
const canny: ControlUnit = {
  kind: 'controlnet',
  image: disc,
  preprocessor: 'canny',
  canny: { low: 0.4, high: 0.8 },
  controlType: 'canny/lineart/anime_lineart/mlsd',
  strength: 0.8,
  start: 0,
  end: 1,
};
const depth: ControlUnit = { kind: 'controlnet', image: ramp, preprocessor: 'none', controlType: 'depth', strength: 0.6, start: 0.1, end: 0.8 };
const imagePrompt: ControlUnit = { kind: 'image-prompt', image: reference, strength: 0.7 };

function request(model: string, controls: ControlUnit[]): ImageRender {
  return { ...normalizeRequest('txt2img', { ...base, model }, ctx()).request, controls };
}

const cases: Array<{ name: string; request: ImageRender }> = [
  { name: 'imagegen-flux-dev-txt2img-controlnet-canny-ip-adapter', request: request('imagegen-flux-dev', [canny, imagePrompt]) },
  { name: 'imagegen-flux-dev-txt2img-controlnet-2units', request: request('imagegen-flux-dev', [canny, depth]) },
  { name: 'imagegen-qwen-image-txt2img-diffsynth-canny', request: request('imagegen-qwen-image', [canny]) },
];

const graphOf = (r: RenderRequest): ComfyGraph => planRender(r, { renderId: 'render-golden' }).items[0]!.graph;

describe('control golden graphs', () => {
  it.each(cases.map((c) => [c.name, c] as const))('%s', (name, c) => {
    const plan = planRender(c.request, { renderId: 'render-golden' });
    const g = plan.items[0]!.graph;
    expect(schemaProblems(g, objectInfo)).toEqual([]);
    expect(preflightGraph(g, objectInfo)).toEqual({ ok: true });
    // Every unit's image is uploaded once, content-addressed, and loaded by name.
    for (const unit of c.request.controls ?? []) expect(plan.uploads.map((u) => u.blob.sha256)).toContain(unit.image.sha256);
    const file = join(here, `${name}.json`);
    const text = `${JSON.stringify(g, null, 2)}\n`;
    if (process.env.UPDATE_GOLDEN === '1') writeFileSync(file, text);
    expect(existsSync(file), `${file} missing: run with UPDATE_GOLDEN=1`).toBe(true);
    expect(text).toBe(readFileSync(file, 'utf8'));
  });
});

describe('control graph facts', () => {
  it('Flux: Redux on the guided positive, then each ControlNet unit chained on both conditionings into the sampler', () => {
    const g = graphOf(request('imagegen-flux-dev', [canny, imagePrompt]));
    expect(g.image_prompt_apply_1).toMatchObject({
      class_type: 'StyleModelApply',
      inputs: { conditioning: ['guidance', 0], style_model: ['style_model', 0], strength: 0.7, strength_type: 'multiply' },
    });
    expect(g.image_prompt_encode_1!.inputs).toMatchObject({ clip_vision: ['clip_vision', 0], image: ['image_prompt_1', 0], crop: 'center' });
    expect(g.control_canny_0!.inputs).toMatchObject({ image: ['control_image_0', 0], low_threshold: 0.4, high_threshold: 0.8 });
    expect(g.control_apply_0!.inputs).toMatchObject({
      positive: ['image_prompt_apply_1', 0],
      negative: ['negative', 0],
      control_net: ['control_type_0', 0],
      image: ['control_canny_0', 0],
      vae: ['vae', 0],
      strength: 0.8,
    });
    expect(g.sampler!.inputs).toMatchObject({ positive: ['control_apply_0', 0], negative: ['control_apply_0', 1] });
    expect(g.controlnet!.inputs.control_net_name).toBe('flux1-dev-controlnet-union-pro.safetensors');
    expect(g.style_model!.inputs.style_model_name).toBe('flux1-redux-dev.safetensors');
    expect(g.clip_vision!.inputs.clip_name).toBe('sigclip_vision_patch14_384.safetensors');
  });

  it('Flux: two units share one loader, each with its own type and step range', () => {
    const g = graphOf(request('imagegen-flux-dev', [canny, depth]));
    expect(Object.values(g).filter((n) => n.class_type === 'ControlNetLoader')).toHaveLength(1);
    expect(g.control_type_1!.inputs).toEqual({ control_net: ['controlnet', 0], type: 'depth' });
    expect(g.control_apply_1!.inputs).toMatchObject({
      positive: ['control_apply_0', 0],
      negative: ['control_apply_0', 1],
      image: ['control_image_1', 0],
      start_percent: 0.1,
      end_percent: 0.8,
    });
    expect(g.sampler!.inputs.positive).toEqual(['control_apply_1', 0]);
  });

  it('Qwen-Image: a DiffSynth patch per unit on the model, the patch file chosen by the control type', () => {
    const g = graphOf(request('imagegen-qwen-image', [canny]));
    expect(g.control_patch_0!.inputs.name).toBe('qwen_image_canny_diffsynth_controlnet.safetensors');
    expect(g.control_apply_0).toMatchObject({
      class_type: 'QwenImageDiffsynthControlnet',
      inputs: { model: ['model_sampling', 0], model_patch: ['control_patch_0', 0], vae: ['vae', 0], image: ['control_canny_0', 0], strength: 0.8 },
    });
    expect(g.sampler!.inputs.model).toEqual(['control_apply_0', 0]);
  });

  it('a unit a model cannot apply is refused with a reason naming it, before any graph exists', () => {
    const schnell = getProfile('imagegen-flux-schnell')!;
    expect(controlUnsupported(schnell, canny)).toBe('imagegen-flux-schnell has no ControlNet file configured');
    expect(controlUnsupported(getProfile('imagegen-qwen-image')!, imagePrompt)).toMatch(/no image-prompt model/);
    expect(controlUnsupported(getProfile('imagegen-qwen-image')!, { ...canny, controlType: 'openpose' })).toMatch(/no DiffSynth model patch for control type "openpose"/);
    expect(() => graphOf(request('imagegen-flux-schnell', [canny]))).toThrow(UnsupportedControlError);
  });
});
