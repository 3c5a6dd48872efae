import { fluxBuilder } from '../../src/models/families/flux/index.ts';
import { h3Builder } from '../../src/models/families/h3/index.ts';
import { wan22Builder } from '../../src/models/families/wan22/index.ts';
import { describe, expect, it } from 'vitest';
import {
  COMFY_SAMPLERS,
  COMFY_SCHEDULERS,
  listSamplers,
  listSchedulers,
  lookupSampler,
  lookupScheduler,
  sigmaScheduleFor,
  samplerLabel,
  schedulerLabel,
  splitSamplerScheduler,
} from '../../src/models/samplers.ts';

describe('sampler names → ComfyUI', () => {
  it.each([
    // A1111 names and aliases
    ['DPM++ 2M', 'dpmpp_2m'],
    ['k_dpmpp_2m', 'dpmpp_2m'],
    ['DPM++ SDE', 'dpmpp_sde'],
    ['DPM++ 2M SDE', 'dpmpp_2m_sde'],
    ['DPM++ 2M SDE Heun', 'dpmpp_2m_sde_heun'],
    ['DPM++ 2S a', 'dpmpp_2s_ancestral'],
    ['DPM++ 3M SDE', 'dpmpp_3m_sde'],
    ['Euler a', 'euler_ancestral'],
    ['k_euler_a', 'euler_ancestral'],
    ['k_euler_ancestral', 'euler_ancestral'],
    ['Euler', 'euler'],
    ['k_euler', 'euler'],
    ['LMS', 'lms'],
    ['Heun', 'heun'],
    ['DPM2', 'dpm_2'],
    ['DPM2 a', 'dpm_2_ancestral'],
    ['DPM fast', 'dpm_fast'],
    ['DPM adaptive', 'dpm_adaptive'],
    ['k_dpm_ad', 'dpm_adaptive'],
    ['DDIM', 'ddim'],
    ['UniPC', 'uni_pc'],
    ['LCM', 'lcm'],
    ['k_lcm', 'lcm'],
    // case/whitespace
    ['euler A', 'euler_ancestral'],
    ['  DPM++   2M  ', 'dpmpp_2m'],
    // sd.cpp
    ['euler_a', 'euler_ancestral'],
    ['dpm++2m', 'dpmpp_2m'],
    ['dpm++2s_a', 'dpmpp_2s_ancestral'],
    ['dpm2', 'dpm_2'],
    ['ipndm_v', 'ipndm_v'],
    // ComfyUI names
    ['res_multistep', 'res_multistep'],
    ['uni_pc_bh2', 'uni_pc_bh2'],
    ['euler_ancestral', 'euler_ancestral'],
  ])('%s → %s', (name, comfy) => {
    expect(lookupSampler(name)).toEqual({ status: 'ok', comfy });
  });

  it('every ComfyUI sampler maps to itself', () => {
    for (const s of COMFY_SAMPLERS) expect(lookupSampler(s)).toEqual({ status: 'ok', comfy: s });
  });

  it.each([
    ['PLMS', 'ipndm'],
    ['plms', 'ipndm'],
    ['Restart', 'heun'],
    ['DDIM CFG++', 'euler_cfg_pp'],
    ['ddim_cfgpp', 'euler_cfg_pp'],
    ['dpm++2mv2', 'dpmpp_2m'],
    ['ddim_trailing', 'ddim'],
    ['tcd', 'lcm'],
  ])('%s has no ComfyUI equivalent: the closest, %s, with the reason', (name, comfy) => {
    const found = lookupSampler(name);
    expect(found).toMatchObject({ status: 'ok', comfy });
    expect((found as { approx?: string }).approx).toMatch(/ComfyUI has no/);
  });

  it('unknown names are unknown; default/automatic mean the model default', () => {
    expect(lookupSampler('Turbo Deluxe')).toEqual({ status: 'unknown' });
    expect(lookupSampler('default')).toEqual({ status: 'ok', comfy: null });
  });

  it('labels: A1111 name when there is one', () => {
    expect(samplerLabel('euler')).toBe('Euler');
    expect(samplerLabel('euler_ancestral')).toBe('Euler a');
    expect(samplerLabel('res_multistep')).toBe('res_multistep');
  });
});

describe('scheduler names → ComfyUI', () => {
  it.each([
    ['karras', 'karras'],
    ['Karras', 'karras'],
    ['sgm_uniform', 'sgm_uniform'],
    ['SGM Uniform', 'sgm_uniform'],
    ['SGMUniform', 'sgm_uniform'],
    ['exponential', 'exponential'],
    ['simple', 'simple'],
    ['normal', 'normal'],
    ['uniform', 'normal'],
    ['discrete', 'normal'],
    ['beta', 'beta'],
    ['ddim', 'ddim_uniform'],
    ['ddim_uniform', 'ddim_uniform'],
    ['kl_optimal', 'kl_optimal'],
    ['KL Optimal', 'kl_optimal'],
    ['linear_quadratic', 'linear_quadratic'],
  ])('%s → %s', (name, comfy) => {
    expect(lookupScheduler(name)).toEqual({ status: 'ok', comfy });
  });

  it('every ComfyUI scheduler maps to itself', () => {
    for (const s of COMFY_SCHEDULERS) expect(lookupScheduler(s)).toEqual({ status: 'ok', comfy: s });
  });

  it('automatic → model default', () => {
    expect(lookupScheduler('automatic')).toEqual({ status: 'ok', comfy: null });
    expect(lookupScheduler('Automatic')).toEqual({ status: 'ok', comfy: null });
  });

  it.each([
    ['align_your_steps', 'align_your_steps'],
    ['Align Your Steps', 'align_your_steps'],
    ['ays', 'align_your_steps'],
    ['Align Your Steps GITS', 'align_your_steps_gits'],
    ['gits', 'align_your_steps_gits'],
    ['Align Your Steps 32', 'align_your_steps_32'],
    ['polyexponential', 'polyexponential'],
    ['Polyexponential', 'polyexponential'],
  ])('%s is a sigma-node schedule (%s)', (n, custom) => {
    expect(lookupScheduler(n)).toMatchObject({ status: 'ok', comfy: null, custom });
  });

  it('sigma-node schedules on flow models: Polyexponential over the flow range; AYS as OptimalSteps, said', () => {
    const flux = { name: 'flux', sampling: fluxBuilder.sampling };
    expect(sigmaScheduleFor('polyexponential', 'Polyexponential', 20, flux)).toEqual({
      sigmas: { node: 'PolyexponentialScheduler', sigmaMax: 1, sigmaMin: 0.001, rho: 1 },
    });
    const ays = sigmaScheduleFor('align_your_steps', 'Align Your Steps', 20, flux);
    expect(ays.sigmas).toEqual({ node: 'OptimalStepsScheduler', modelType: 'FLUX' });
    expect(ays.approx).toMatch(/OptimalStepsScheduler/);
    expect(sigmaScheduleFor('align_your_steps', 'Align Your Steps', 2, flux)).toEqual({ approx: expect.stringMatching(/at least 3 steps/) });
    expect(sigmaScheduleFor('align_your_steps', 'Align Your Steps', 20, { name: 'wan22', sampling: wan22Builder.sampling }).sigmas).toEqual({
      node: 'OptimalStepsScheduler',
      modelType: 'Wan',
    });
  });

  it("the family's facts decide: an SDXL-style family gets its own Align Your Steps table and SD's sigma range, a family with none is told why", () => {
    const sdxl = {
      name: 'sdxl',
      sampling: { prediction: 'eps', emptyLatent: 'EmptyLatentImage', alignYourSteps: { node: 'AlignYourStepsScheduler', modelType: 'SDXL' } },
    } as const;
    expect(sigmaScheduleFor('align_your_steps', 'Align Your Steps', 20, sdxl)).toEqual({ sigmas: { node: 'AlignYourStepsScheduler', modelType: 'SDXL' } });
    expect(sigmaScheduleFor('align_your_steps_gits', 'Align Your Steps GITS', 20, sdxl)).toMatchObject({
      sigmas: { node: 'AlignYourStepsScheduler', modelType: 'SDXL' },
      approx: expect.stringMatching(/rendered as Align Your Steps/),
    });
    expect(sigmaScheduleFor('polyexponential', 'Polyexponential', 20, sdxl).sigmas).toEqual({
      node: 'PolyexponentialScheduler',
      sigmaMax: 14.614642,
      sigmaMin: 0.0291675,
      rho: 1,
    });
    const none = sigmaScheduleFor('align_your_steps', 'Align Your Steps', 20, { name: 'h3', sampling: h3Builder.sampling });
    expect(none.sigmas).toBeUndefined();
    expect(none.approx).toMatch(/the h3 family has no Align Your Steps schedule/);
  });

  it('turbo, smoothstep, lcm: the closest KSampler scheduler, with the reason', () => {
    expect(lookupScheduler('turbo')).toMatchObject({ status: 'ok', comfy: 'sgm_uniform', approx: expect.stringMatching(/SD-Turbo/) });
    expect(lookupScheduler('smoothstep')).toMatchObject({ status: 'ok', comfy: 'simple' });
    expect(lookupScheduler('lcm')).toMatchObject({ status: 'ok', comfy: 'sgm_uniform' });
  });

  it('unknown is unknown', () => {
    expect(lookupScheduler('wobbly')).toEqual({ status: 'unknown' });
  });

  it('labels', () => {
    expect(schedulerLabel('simple')).toBe('Simple');
    expect(schedulerLabel('normal')).toBe('Normal');
    expect(schedulerLabel('ddim_uniform')).toBe('DDIM');
    expect(schedulerLabel('sgm_uniform')).toBe('SGM Uniform');
  });
});

describe('"Sampler Scheduler" names', () => {
  it.each([
    ['DPM++ 2M Karras', 'DPM++ 2M', 'Karras'],
    ['DPM++ 2M SDE Exponential', 'DPM++ 2M SDE', 'Exponential'],
    ['Euler a SGM Uniform', 'Euler a', 'SGM Uniform'],
    ['Euler SGMUniform', 'Euler', 'SGMUniform'],
    ['dpm++ 2m karras', 'dpm++ 2m', 'Karras'],
  ])('%s → %s + %s', (name, sampler, scheduler) => {
    expect(splitSamplerScheduler(name)).toEqual({ sampler, scheduler });
  });

  it('whole sampler names are not split', () => {
    expect(splitSamplerScheduler('DPM++ 2M SDE Heun')).toEqual({ sampler: 'DPM++ 2M SDE Heun' });
    expect(splitSamplerScheduler('DDIM')).toEqual({ sampler: 'DDIM' });
    expect(splitSamplerScheduler('Euler')).toEqual({ sampler: 'Euler' });
  });
});

describe('GET /samplers and /schedulers lists', () => {
  it('samplers: A1111 shape, string option values, only runnable ones', () => {
    const list = listSamplers();
    const names = list.map((s) => s.name);
    expect(names.slice(0, 3)).toEqual(['DPM++ 2M', 'DPM++ SDE', 'DPM++ 2M SDE']);
    expect(names).toContain('Euler a');
    expect(names).toContain('res_multistep');
    // Every sampler A1111 lists is listed (and runs), the closest-match ones too.
    for (const n of ['PLMS', 'Restart', 'DDIM CFG++', 'DDIM', 'UniPC', 'LCM']) expect(names).toContain(n);
    for (const s of list) {
      expect(Object.keys(s).sort()).toEqual(['aliases', 'name', 'options']);
      for (const v of Object.values(s.options)) expect(typeof v).toBe('string');
      expect(lookupSampler(s.name).status).toBe('ok');
      for (const a of s.aliases) expect(lookupSampler(a)).toEqual(lookupSampler(s.name));
    }
    expect(list.find((s) => s.name === 'DPM++ SDE')!.options).toEqual({ scheduler: 'karras', second_order: 'True', brownian_noise: 'True' });
    expect(list.find((s) => s.name === 'Euler a')!.aliases).toEqual(['k_euler_a', 'k_euler_ancestral', 'euler_ancestral', 'euler_a']);
    // Every ComfyUI sampler is reachable from the list.
    const reachable = new Set(list.map((s) => (lookupSampler(s.name) as { comfy: string }).comfy));
    for (const c of COMFY_SAMPLERS) expect(reachable).toContain(c);
  });

  it('schedulers: A1111 shape, every entry resolvable', () => {
    const list = listSchedulers();
    expect(list[0]).toEqual({ name: 'automatic', label: 'Automatic', aliases: null, default_rho: -1, need_inner_model: false });
    expect(list.find((s) => s.name === 'karras')!.default_rho).toBe(7);
    expect(list.find((s) => s.name === 'sgm_uniform')!.aliases).toEqual(['SGMUniform']);
    for (const n of ['align_your_steps', 'polyexponential', 'align_your_steps_GITS', 'turbo']) expect(list.map((s) => s.name)).toContain(n);
    for (const s of list) {
      expect(lookupScheduler(s.name).status).toBe('ok');
      expect(lookupScheduler(s.label).status).toBe('ok');
    }
  });
});
