/**
 * Golden video graphs: Wan 2.2 TI2V-5B (t2v, i2v) and MiniMax-H3 (t2va, fl2va first / last / both, ref2va),
 * compared with `test/golden/<model>-<case>.json` (UPDATE_GOLDEN=1 rewrites) and validated against the
 * recorded `/object_info` fixture node by node (schema-check.ts) and by the client's pre-submit check, plus the facts of the graphs ComfyUI
 * executed end to end (recorded Wan 2.2 and H3 FL2VA runs).
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import type { ComfyGraph, NodeLink } from '../../src/comfyui/graph.ts';
import { isLink } from '../../src/comfyui/graph.ts';
import { preflightGraph } from '../../src/comfyui/preflight.ts';
import { schemaProblems } from './schema-check.ts';
import { planRender } from '../../src/models/plan.ts';
import { applyModelOverrides, getProfile, resetModelOverrides } from '../../src/models/registry.ts';
import { defaultVideoSpec } from '../../src/models/video.ts';
import type { BlobRef, RenderRequest, VideoRender, VideoSpec } from '../../src/contracts/render.ts';
import { loadObjectInfoWithProfileFiles } from '../../tools/fake-comfyui/fixture.ts';

const here = dirname(fileURLToPath(import.meta.url));
// The recorded node schemas, with each profile's model files in its loader's list as a box with them installed
// lists them: a model or family added as files is checked like the ones the recording had.
const objectInfo = loadObjectInfoWithProfileFiles();

const blob = (n: number): BlobRef => ({ sha256: String(n).repeat(64).slice(0, 64), size: 100, mime: 'image/png', width: 640, height: 384 });

function videoRequest(model: string, video: Partial<VideoSpec>, over: Partial<VideoRender> = {}): VideoRender {
  const p = getProfile(model)!;
  const d = p.defaults;
  return {
    kind: 'video',
    model,
    prompt: 'a lighthouse on a cliff at dusk, waves crashing',
    negativePrompt: p.cfgMode === 'free' ? 'blurry, static' : '',
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
    ...over,
  };
}

const WAN = 'videogen-wan22-5b';
const H3 = 'videogen-minimax-h3';
const cases: Array<[string, VideoRender]> = [
  [`${WAN}-t2v`, videoRequest(WAN, { task: 't2v', frames: 121 })],
  [`${WAN}-i2v`, videoRequest(WAN, { task: 'i2v', frames: 81, fps: 16, firstFrame: blob(1), shift: 5 })],
  [`${H3}-t2va`, videoRequest(H3, { task: 't2va', frames: 124 })],
  [`${H3}-fl2va-first`, videoRequest(H3, { task: 'fl2va', frames: 124, firstFrame: blob(1) })],
  [`${H3}-fl2va-last`, videoRequest(H3, { task: 'fl2va', frames: 107, lastFrame: blob(2) })],
  [`${H3}-fl2va-first-last`, videoRequest(H3, { task: 'fl2va', frames: 124, firstFrame: blob(1), lastFrame: blob(2), shift: 12, audioShift: 3 })],
  [`${H3}-ref2va`, videoRequest(H3, { task: 'ref2va', frames: 124, references: [blob(1), blob(2), blob(3)] })],
];

const graphOf = (req: RenderRequest): ComfyGraph => {
  const plan = planRender(req, { renderId: 'render-golden' });
  expect(plan.items).toHaveLength(1);
  return plan.items[0]!.graph;
};
const byName = (name: string): ComfyGraph => graphOf(cases.find((c) => c[0] === name)![1]);
const node = (g: ComfyGraph, link: unknown) => {
  expect(isLink(link)).toBe(true);
  return g[(link as NodeLink)[0]]!;
};
const ofClass = (g: ComfyGraph, cls: string) => Object.values(g).filter((n) => n.class_type === cls);

describe('golden video graphs', () => {
  it.each(cases)('%s', (name, req) => {
    const g = graphOf(req);
    for (const [id, n] of Object.entries(g)) {
      expect(objectInfo[n.class_type], `${id}: ${n.class_type} in object_info`).toBeDefined();
      for (const [input, v] of Object.entries(n.inputs)) {
        if (!isLink(v)) continue;
        expect(g[v[0]], `${id}.${input} → ${v[0]}`).toBeDefined();
        expect(v[1]).toBeLessThan(objectInfo[g[v[0]]!.class_type]!.output.length);
      }
    }
    expect(schemaProblems(g, objectInfo)).toEqual([]);
    expect(preflightGraph(g, objectInfo)).toEqual({ ok: true });

    const file = join(here, `${name}.json`);
    const text = `${JSON.stringify(g, null, 2)}\n`;
    if (process.env.UPDATE_GOLDEN === '1') writeFileSync(file, text);
    expect(existsSync(file), `${file} missing: run with UPDATE_GOLDEN=1`).toBe(true);
    expect(text).toBe(readFileSync(file, 'utf8'));
  });
});

describe('video graph facts (recorded executions)', () => {
  it('every video graph: CreateVideo at the request fps → SaveVideo mp4/h264 (dot-path codec) under the job prefix', () => {
    for (const [name, req] of cases) {
      const g = graphOf(req);
      expect(g.save, name).toMatchObject({
        class_type: 'SaveVideo',
        inputs: { filename_prefix: 'comfy-durable/render-golden/0', format: 'mp4', 'format.codec': 'h264' },
      });
      expect(g.save!.inputs.codec).toBeUndefined();
      const create = node(g, g.save!.inputs.video);
      expect(create).toMatchObject({ class_type: 'CreateVideo', inputs: { fps: req.video.fps } });
      expect(node(g, create.inputs.images).class_type).toBe('VAEDecode');
    }
  });

  it('Wan 2.2: template loaders, ModelSamplingSD3, Wan22ImageToVideoLatent with the frame count, KSampler uni_pc/simple cfg 5, no audio', () => {
    const g = byName(`${WAN}-t2v`);
    expect(g.unet).toMatchObject({ class_type: 'UNETLoader', inputs: { unet_name: 'wan2.2_ti2v_5B_fp16.safetensors', weight_dtype: 'default' } });
    expect(g.clip).toMatchObject({ class_type: 'CLIPLoader', inputs: { clip_name: 'umt5_xxl_fp8_e4m3fn_scaled.safetensors', type: 'wan' } });
    expect(g.vae!.inputs.vae_name).toBe('wan2.2_vae.safetensors');
    expect(node(g, g.sampler!.inputs.model)).toMatchObject({ class_type: 'ModelSamplingSD3', inputs: { shift: 8 } });
    const latent = node(g, g.sampler!.inputs.latent_image);
    expect(latent).toMatchObject({ class_type: 'Wan22ImageToVideoLatent', inputs: { width: 640, height: 384, length: 121, batch_size: 1 } });
    expect(latent.inputs.start_image).toBeUndefined();
    expect(g.sampler!.inputs).toMatchObject({ seed: 1234, steps: 20, cfg: 5, sampler_name: 'uni_pc', scheduler: 'simple', denoise: 1 });
    expect(node(g, g.sampler!.inputs.negative)).toMatchObject({ class_type: 'CLIPTextEncode', inputs: { text: 'blurry, static' } });
    expect(node(g, g.save!.inputs.video).inputs.audio).toBeUndefined();
  });

  it('Wan 2.2 i2v: LoadImage → Wan22ImageToVideoLatent.start_image; the shift comes from the request', () => {
    const g = byName(`${WAN}-i2v`);
    const latent = node(g, g.sampler!.inputs.latent_image);
    expect(latent.inputs.length).toBe(81);
    const start = node(g, latent.inputs.start_image);
    expect(start).toMatchObject({ class_type: 'LoadImage', inputs: { image: `comfy-durable/${'1'.repeat(64)}.png` } });
    expect(node(g, g.sampler!.inputs.model).inputs.shift).toBe(5);
    expect(node(g, g.save!.inputs.video).inputs.fps).toBe(16);
  });

  it('H3: BasicGuider (no negative, no CFG), RandomNoise seed, res_multistep/simple, AV latent from the conditioning node, audio decoded and muxed', () => {
    for (const name of [`${H3}-t2va`, `${H3}-fl2va-first`, `${H3}-ref2va`]) {
      const g = byName(name);
      expect(ofClass(g, 'CLIPTextEncode')).toHaveLength(0);
      expect(g.clip).toMatchObject({ class_type: 'CLIPLoader', inputs: { clip_name: 'qwen3vl_32b_minimax_h3_nvfp4_awq.safetensors', type: 'minimax' } });
      const s = g.sampler!;
      expect(s.class_type).toBe('SamplerCustomAdvanced');
      expect(node(g, s.inputs.noise)).toMatchObject({ class_type: 'RandomNoise', inputs: { noise_seed: 1234 } });
      expect(node(g, s.inputs.sampler)).toMatchObject({ class_type: 'KSamplerSelect', inputs: { sampler_name: 'res_multistep' } });
      expect(node(g, s.inputs.sigmas)).toMatchObject({ class_type: 'BasicScheduler', inputs: { scheduler: 'simple', steps: 20, denoise: 1 } });
      const guider = node(g, s.inputs.guider);
      expect(guider.class_type).toBe('BasicGuider');
      const cond = node(g, guider.inputs.conditioning);
      expect(s.inputs.latent_image).toEqual([(guider.inputs.conditioning as NodeLink)[0], 1]);
      expect(cond.inputs).toMatchObject({ width: 640, height: 384, prompt: 'a lighthouse on a cliff at dusk, waves crashing' });
      const create = node(g, g.save!.inputs.video);
      const audio = node(g, create.inputs.audio);
      expect(audio.class_type).toBe('VAEDecodeAudio');
      expect(node(g, audio.inputs.vae).inputs.vae_name).toBe('minimax_h3_audio_vae_fp32.safetensors');
      expect(node(g, node(g, create.inputs.images).inputs.vae).inputs.vae_name).toBe('minimax_h3_video_vae_fp16.safetensors');
      expect(ofClass(g, 'MiniMaxH3SigmaShift')).toHaveLength(0);
    }
  });

  it('H3 fl2va: first and last frames wire first_frame / last_frame of MiniMaxH3ImageToVideo on the FL2VA checkpoint', () => {
    const cond = (name: string) => {
      const g = byName(name);
      expect(g.unet!.inputs.unet_name).toBe('minimax_h3_fl2va_pruned_int8_convrot.safetensors');
      const c = node(g, node(g, g.sampler!.inputs.guider).inputs.conditioning);
      expect(c.class_type).toBe('MiniMaxH3ImageToVideo');
      return { g, c };
    };
    const first = cond(`${H3}-fl2va-first`);
    expect(node(first.g, first.c.inputs.first_frame).class_type).toBe('LoadImage');
    expect(first.c.inputs.last_frame).toBeUndefined();
    expect(first.c.inputs.length).toBe(124);
    const last = cond(`${H3}-fl2va-last`);
    expect(last.c.inputs.first_frame).toBeUndefined();
    expect(node(last.g, last.c.inputs.last_frame).inputs.image).toBe(`comfy-durable/${'2'.repeat(64)}.png`);
    expect(last.c.inputs.length).toBe(107);
    const both = cond(`${H3}-fl2va-first-last`);
    expect(node(both.g, both.c.inputs.first_frame).inputs.image).toBe(`comfy-durable/${'1'.repeat(64)}.png`);
    expect(node(both.g, both.c.inputs.last_frame).inputs.image).toBe(`comfy-durable/${'2'.repeat(64)}.png`);
    const shift = node(both.g, node(both.g, both.g.sampler!.inputs.guider).inputs.model);
    expect(shift).toMatchObject({ class_type: 'MiniMaxH3SigmaShift', inputs: { shift_video: 12, shift_audio: 3 } });
    const t2va = cond(`${H3}-t2va`);
    expect(t2va.c.inputs.first_frame).toBeUndefined();
    expect(t2va.c.inputs.last_frame).toBeUndefined();
  });

  it('H3 ref2va: MiniMaxH3ReferenceToVideo on the Ref2VA checkpoint, references as ref_images.ref_image_<i> in order', () => {
    const g = byName(`${H3}-ref2va`);
    expect(g.unet!.inputs.unet_name).toBe('minimax_h3_ref2va_pruned_int8_convrot.safetensors');
    const c = node(g, node(g, g.sampler!.inputs.guider).inputs.conditioning);
    expect(c.class_type).toBe('MiniMaxH3ReferenceToVideo');
    expect(c.inputs).toMatchObject({ ref_image_size: 'match' });
    expect(node(g, c.inputs.audio_vae).inputs.vae_name).toBe('minimax_h3_audio_vae_fp32.safetensors');
    for (let i = 0; i < 3; i++) {
      expect(node(g, c.inputs[`ref_images.ref_image_${i}`]).inputs.image).toBe(`comfy-durable/${String(i + 1).repeat(64)}.png`);
    }
  });

  it('model files come from MODELS_CONFIG overrides (a GGUF Wan unet uses the GGUF loader)', () => {
    applyModelOverrides({
      [WAN]: { files: { unet: 'wan2.2_ti2v_5B-Q8_0.gguf', vae: 'wan2.2_vae_bf16.safetensors' } },
      [H3]: { files: { unetRef2va: 'h3-ref2va-fp8.safetensors', audioVae: 'h3-audio.safetensors' } },
    });
    try {
      const wan = byName(`${WAN}-t2v`);
      expect(wan.unet).toMatchObject({ class_type: 'UnetLoaderGGUF', inputs: { unet_name: 'wan2.2_ti2v_5B-Q8_0.gguf' } });
      expect(wan.vae!.inputs.vae_name).toBe('wan2.2_vae_bf16.safetensors');
      const h3 = byName(`${H3}-ref2va`);
      expect(h3.unet!.inputs.unet_name).toBe('h3-ref2va-fp8.safetensors');
      expect(h3.audio_vae!.inputs.vae_name).toBe('h3-audio.safetensors');
      expect(() => applyModelOverrides({ [H3]: { files: { lora: 'x.safetensors' } } })).toThrow(/unknown file role/);
    } finally {
      resetModelOverrides();
    }
  });

  it('the recorded executed graphs use the same node classes and key inputs as ours', () => {
    // The recorded Wan 2.2 t2v graph that ran on ComfyUI 0.33.0: UNETLoader, CLIPLoader(wan), VAELoader,
    // ModelSamplingSD3, CLIPTextEncode ×2, Wan22ImageToVideoLatent, KSampler, VAEDecode, CreateVideo, SaveVideo.
    const classes = new Set(Object.values(byName(`${WAN}-t2v`)).map((n) => n.class_type));
    expect([...classes].sort()).toEqual(
      ['CLIPLoader', 'CLIPTextEncode', 'CreateVideo', 'KSampler', 'ModelSamplingSD3', 'SaveVideo', 'UNETLoader', 'VAEDecode', 'VAELoader', 'Wan22ImageToVideoLatent'].sort(),
    );
    // graph-h3-fl2va.json (turbo switch and duration math aside): the same sampling chain.
    const h3 = new Set(Object.values(byName(`${H3}-fl2va-first-last`)).map((n) => n.class_type));
    for (const cls of ['UNETLoader', 'CLIPLoader', 'VAELoader', 'MiniMaxH3ImageToVideo', 'BasicScheduler', 'KSamplerSelect', 'RandomNoise', 'BasicGuider', 'SamplerCustomAdvanced', 'VAEDecode', 'VAEDecodeAudio', 'CreateVideo', 'SaveVideo', 'LoadImage']) {
      expect(h3.has(cls), cls).toBe(true);
    }
  });
});
