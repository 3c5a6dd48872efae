import { describe, expect, it } from 'vitest';
import { OUTPUT_NODE } from '../../src/models/families/index.ts';
import { filenamePrefixFor, planRender } from '../../src/models/plan.ts';
import type { BlobRef, ImageRender } from '../../src/contracts/render.ts';

const blob = (c: string, mime = 'image/png'): BlobRef => ({ sha256: c.repeat(64), size: 10, mime, width: 64, height: 64 });

function req(over: Partial<ImageRender> = {}): ImageRender {
  return {
    kind: 'txt2img',
    model: 'imagegen-flux-dev',
    prompt: 'a red fox',
    negativePrompt: '',
    seed: 1000,
    steps: 20,
    cfg: 1,
    guidance: 3.5,
    sampler: 'euler',
    scheduler: 'simple',
    width: 512,
    height: 512,
    batchSize: 1,
    nIter: 1,
    denoise: 1,
    extraImages: [],
    report: { samplerName: 'Euler', scheduler: 'Simple', requestedWidth: 512, requestedHeight: 512 },
    ...over,
  };
}

describe('planRender', () => {
  it('one single-image graph per item, item i with seed + i, per-item filename prefix', () => {
    const plan = planRender(req({ batchSize: 2, nIter: 3 }), { renderId: 'render-01ABC' });
    expect(plan.items).toHaveLength(6);
    expect(plan.outputNode).toBe(OUTPUT_NODE);
    plan.items.forEach((item, i) => {
      expect(item.index).toBe(i);
      expect(item.seed).toBe(1000 + i);
      expect(item.graph.sampler!.inputs.seed).toBe(1000 + i);
      expect(item.graph.latent!.inputs.batch_size).toBe(1);
      expect(item.graph[plan.outputNode]!.class_type).toBe('SaveImage');
      expect(item.graph[plan.outputNode]!.inputs.filename_prefix).toBe(`comfy-durable/render-01ABC/${i}`);
    });
    expect(filenamePrefixFor('r', 3)).toBe('comfy-durable/r/3');
  });

  it('is deterministic', () => {
    const r = req({ kind: 'img2img', initImage: blob('a'), mask: blob('b'), denoise: 0.6 });
    expect(JSON.stringify(planRender(r, { renderId: 'x' }))).toBe(JSON.stringify(planRender(r, { renderId: 'x' })));
  });

  it('uploads are content-addressed, deduplicated, and referenced by LoadImage', () => {
    const plan = planRender(
      req({ model: 'imagegen-flux-kontext', kind: 'edit', guidance: 2.5, extraImages: [blob('a'), blob('c', 'image/jpeg'), blob('a')] }),
      { renderId: 'r' },
    );
    expect(plan.uploads).toEqual([
      { blob: blob('a'), subfolder: 'comfy-durable', filename: `${'a'.repeat(64)}.png` },
      { blob: blob('c', 'image/jpeg'), subfolder: 'comfy-durable', filename: `${'c'.repeat(64)}.jpg` },
    ]);
    const g = plan.items[0]!.graph;
    expect(g.ref_1!.inputs.image).toBe(`comfy-durable/${'a'.repeat(64)}.png`);
    expect(g.ref_2!.inputs.image).toBe(`comfy-durable/${'c'.repeat(64)}.jpg`);
    expect(g.ref_3!.inputs.image).toBe(`comfy-durable/${'a'.repeat(64)}.png`);
  });

  it('refuses kinds the model cannot render and unknown models', () => {
    expect(() => planRender(req({ model: 'imagegen-qwen-image-edit', kind: 'img2img' }), { renderId: 'r' })).toThrow(/does not support img2img/);
    expect(() => planRender(req({ model: 'nope' }), { renderId: 'r' })).toThrow(/unknown model/);
  });

  it('img2img uses denoise; txt2img and edit use 1', () => {
    const i2i = planRender(req({ kind: 'img2img', initImage: blob('a'), denoise: 0.4 }), { renderId: 'r' });
    expect(i2i.items[0]!.graph.sampler!.inputs.denoise).toBe(0.4);
    const t2i = planRender(req({ denoise: 0.4 }), { renderId: 'r' });
    expect(t2i.items[0]!.graph.sampler!.inputs.denoise).toBe(1);
  });
});
