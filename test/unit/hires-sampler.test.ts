/**
 * The hires fix's own sampler and scheduler (A1111 `hr_sampler_name`, `hr_scheduler`): the second KSampler
 * uses them, the infotext reports them as A1111 does, bad names are a 400 naming the field, and a request
 * that names none (or "Use same …") builds exactly the graph it built before.
 */
import { describe, expect, it } from 'vitest';
import { normalizeRequest } from '../../src/api/a1111/normalize.ts';
import { planRender } from '../../src/models/plan.ts';
import { infotextFor } from '../../src/infotext/format.ts';
import { ctx, thrown } from '../golden/helpers.ts';

const base = {
  prompt: 'a lighthouse',
  model: 'imagegen-flux-dev',
  width: 512,
  height: 512,
  seed: 7,
  steps: 12,
  enable_hr: true,
  hr_scale: 1.5,
  denoising_strength: 0.5,
};

function build(body: Record<string, unknown>) {
  const n = normalizeRequest('txt2img', body, ctx());
  const graph = planRender(n.request, { renderId: 'render-hr' }).items[0]!.graph;
  return { n, graph, info: infotextFor(n.request, 0) };
}

describe('hires fix sampler and scheduler', () => {
  it('the second pass samples with hr_sampler_name and hr_scheduler; the first pass keeps its own', () => {
    const { n, graph, info } = build({ ...base, sampler_name: 'Euler', scheduler: 'Simple', hr_sampler_name: 'DPM++ 2M', hr_scheduler: 'Karras' });
    expect(graph.sampler!.inputs).toMatchObject({ sampler_name: 'euler', scheduler: 'simple' });
    expect(graph.hr_sampler!.inputs).toMatchObject({ sampler_name: 'dpmpp_2m', scheduler: 'karras', denoise: 0.5 });
    expect(n.warnings.join('\n')).not.toMatch(/hr_sampler_name|hr_scheduler/);
    expect(info).toMatch(/Sampler: Euler, Schedule type: Simple, .*Hires sampler: DPM\+\+ 2M, Hires schedule type: Karras/);
  });

  it('a scheduler inside hr_sampler_name wins over hr_scheduler, as in A1111', () => {
    const { graph } = build({ ...base, sampler_name: 'Euler', hr_sampler_name: 'DPM++ 2M Karras', hr_scheduler: 'Exponential' });
    expect(graph.hr_sampler!.inputs).toMatchObject({ sampler_name: 'dpmpp_2m', scheduler: 'karras' });
  });

  it('"Use same sampler", "Use same scheduler" and absent fields change nothing: same graph, no infotext keys', () => {
    const plain = build(base);
    for (const same of [
      { hr_sampler_name: 'Use same sampler', hr_scheduler: 'Use same scheduler' },
      { hr_sampler_name: '', hr_scheduler: null },
    ]) {
      const b = build({ ...base, ...same });
      expect(b.graph).toEqual(plain.graph);
      expect(b.info).toBe(plain.info);
      expect(b.n.warnings).toEqual(plain.n.warnings);
    }
    expect(plain.info).not.toMatch(/Hires sampler|Hires schedule type/);
    // Naming the first pass's own sampler is no difference either.
    const first = plain.graph.sampler!.inputs.sampler_name as string;
    expect(build({ ...base, hr_sampler_name: first === 'euler' ? 'Euler' : first }).info).not.toMatch(/Hires sampler/);
  });

  it('unknown names are a 400 naming the field; hr_prompt and hr_checkpoint_name still warn as not applied', () => {
    const s = thrown(() => normalizeRequest('txt2img', { ...base, hr_sampler_name: 'Nope 9000' }, ctx()));
    expect(s).toMatchObject({ status: 400, field: 'hr_sampler_name' });
    expect(s.message).toMatch(/hr_sampler_name: "Nope 9000" is not a known sampler; valid samplers: /);
    const t = thrown(() => normalizeRequest('txt2img', { ...base, hr_scheduler: 'Sideways' }, ctx()));
    expect(t).toMatchObject({ status: 400, field: 'hr_scheduler' });
    const { n } = build({ ...base, hr_prompt: 'sharper', hr_checkpoint_name: 'other.safetensors' });
    expect(n.warnings).toEqual(
      expect.arrayContaining([expect.stringMatching(/^hr_prompt: not applied/), expect.stringMatching(/^hr_checkpoint_name: not applied/)]),
    );
  });

  it('without enable_hr the hr_ fields are not looked at', () => {
    expect(() => normalizeRequest('txt2img', { ...base, enable_hr: false, hr_sampler_name: 'Nope 9000' }, ctx())).not.toThrow();
  });
});
