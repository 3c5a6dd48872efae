import { describe, expect, it } from 'vitest';
import { ItemProgress } from '../../src/activities/item-progress.ts';
import type { ComfyGraph } from '../../src/comfyui/graph.ts';

const node = (class_type: string) => ({ class_type, inputs: {}, _meta: { title: class_type } });
const image: ComfyGraph = {
  unet: node('UNETLoader'),
  positive: node('CLIPTextEncode'),
  sampler: node('KSampler'),
  decode: node('VAEDecode'),
  save: node('SaveImage'),
};
const hires: ComfyGraph = { ...image, hr_decode: node('VAEDecode'), hr_sampler: node('KSampler') };

describe('item progress only rises and names its stage', () => {
  it('sampling, then decode (its 0/1 bar does not take it back to 0) and save as stages of their own', () => {
    const p = new ItemProgress(image, false);
    const seen: number[] = [];
    const at = (node: string, value: number, max: number, t: number) => {
      const r = p.update(node, value, max, t);
      seen.push(r.fraction);
      return r;
    };
    expect(at('unet', 0, 1, 0).phase).toBe('starting');
    for (let s = 1; s <= 20; s++) expect(at('sampler', s, 20, 100 * s).phase).toBe('sampling');
    expect(seen.at(-1)).toBeCloseTo(0.85);
    expect(at('decode', 0, 1, 2100)).toMatchObject({ phase: 'decoding' });
    const later = p.tick(5000);
    expect(later.fraction).toBeGreaterThan(0.85);
    expect(later.fraction).toBeLessThan(0.95);
    expect(at('save', 0, 1, 5100)).toMatchObject({ phase: 'saving', fraction: 0.95 });
    for (let i = 1; i < seen.length; i++) expect(seen[i]!).toBeGreaterThanOrEqual(seen[i - 1]!);
  });

  it('hires: the decode between the two samplers is not the final decode', () => {
    const p = new ItemProgress(hires, false);
    p.update('sampler', 10, 10, 1);
    const mid = p.update('hr_decode', 0, 1, 2);
    expect(mid.phase).toBe('sampling');
    expect(mid.fraction).toBeCloseTo(0.425);
    expect(p.update('hr_sampler', 5, 10, 3).fraction).toBeCloseTo(0.6375);
  });

  it('video: the decode has a large share and creeps with time', () => {
    const p = new ItemProgress({ sampler: node('KSampler'), decode: node('VAEDecode'), create_video: node('CreateVideo'), save: node('SaveVideo') }, true);
    p.update('sampler', 10, 10, 10_000);
    expect(p.update('decode', 0, 1, 10_000).fraction).toBeCloseTo(0.6);
    const a = p.tick(15_000).fraction;
    const b = p.tick(60_000).fraction;
    expect(a).toBeGreaterThan(0.6);
    expect(b).toBeGreaterThan(a);
    expect(b).toBeLessThan(0.95);
  });
});

describe('textinfo says what happens', () => {
  it('waiting only when a render waits; stopping after an interrupt; decode and save as stages', async () => {
    const { textinfo, a1111Progress } = await import('../../src/api/a1111/discovery-routes.ts');
    expect(textinfo({ jobCount: 0 })).toBeNull();
    expect(textinfo({ jobCount: 1, pending: 'waiting' })).toBe('Waiting for a GPU');
    expect(textinfo({ jobCount: 1, pending: 'stopping' })).toBe('Stopping (interrupted)');
    expect((a1111Progress({ jobCount: 1, pending: 'stopping' }).state as { interrupted: boolean }).interrupted).toBe(true);
    expect(textinfo({ jobCount: 1, pending: 'done' })).toBe('Finishing');
    const current = { renderId: 'r', item: 0, items: 2, value: 0, max: 1, progress: 0.45, etaSeconds: 1 };
    expect(textinfo({ jobCount: 1, current: { ...current, phase: 'decoding' } })).toBe('Decoding (VAE) image 1/2');
    expect(textinfo({ jobCount: 1, current: { ...current, phase: 'saving' } })).toBe('Saving image 1/2');
    expect(textinfo({ jobCount: 1, current: { ...current, value: 3, max: 8, phase: 'sampling' } })).toBe('Sampling step 3/8, image 1/2');
  });
});
