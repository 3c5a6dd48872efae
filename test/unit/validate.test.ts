import { describe, expect, it } from 'vitest';
import type { ComfyGraph } from '../../src/comfyui/graph.ts';
import { comboOptions } from '../../src/comfyui/object-info.ts';
import { validateGraph, validateNodeInput } from '../../src/comfyui/validate.ts';
import type { GraphValidation, NodeError } from '../../src/comfyui/validate.ts';
import { loadObjectInfoFixture } from '../../src/fake-comfyui/fixture.ts';
import { fluxGgufGraph, sdGraph } from '../../src/fake-comfyui/testing.ts';

const info = loadObjectInfoFixture();

function failed(v: GraphValidation) {
  if (v.ok) throw new Error(`expected a failed validation, got ${JSON.stringify(v)}`);
  return v;
}

function nodeError(v: GraphValidation, id: string): NodeError {
  const e = v.nodeErrors[id];
  if (!e) throw new Error(`no node error for ${id}: ${JSON.stringify(v.nodeErrors)}`);
  return e;
}

/** RandomNoise/KSamplerSelect/BasicScheduler path: V3 `["COMBO", {options}]` specs. */
function customSamplerGraph(sampler = 'euler', scheduler = 'simple'): ComfyGraph {
  const g = sdGraph();
  delete g['3'];
  return {
    ...g,
    '20': { class_type: 'RandomNoise', inputs: { noise_seed: 5 }, _meta: { title: 'noise' } },
    '21': { class_type: 'KSamplerSelect', inputs: { sampler_name: sampler }, _meta: { title: 'sampler' } },
    '22': { class_type: 'BasicScheduler', inputs: { model: ['4', 0], scheduler, steps: 4, denoise: 1 }, _meta: { title: 'sched' } },
    '23': { class_type: 'BasicGuider', inputs: { model: ['4', 0], conditioning: ['6', 0] }, _meta: { title: 'guider' } },
    '3': {
      class_type: 'SamplerCustomAdvanced',
      inputs: { noise: ['20', 0], guider: ['23', 0], sampler: ['21', 0], sigmas: ['22', 0], latent_image: ['5', 0] },
      _meta: { title: 'sample' },
    },
  };
}

describe('validateGraph: valid graphs', () => {
  it('accepts an SD graph and reports its output node', () => {
    expect(validateGraph(sdGraph(), info)).toEqual({ ok: true, outputs: ['9'], nodeErrors: {} });
  });

  it('accepts V1 combos given as 1-tuples (GGUF loaders) and V3 nodes', () => {
    expect(validateGraph(fluxGgufGraph(), info)).toEqual({ ok: true, outputs: ['10'], nodeErrors: {} });
  });

  it('accepts V3 COMBO specs and rejects values outside them', () => {
    expect(validateGraph(customSamplerGraph(), info).ok).toBe(true);
    const v = failed(validateGraph(customSamplerGraph('euler', 'nope'), info));
    expect(nodeError(v, '22').errors).toEqual([
      {
        type: 'value_not_in_list',
        message: 'Value not in list',
        details: "scheduler: 'nope' not in ['simple', 'sgm_uniform', 'karras', 'exponential', 'ddim_uniform', 'beta', 'normal', 'linear_quadratic', 'kl_optimal']",
        extra_info: { input_name: 'scheduler', input_config: info.BasicScheduler!.input.required!.scheduler, received_value: 'nope' },
      },
    ]);
  });

  it('converts values like Python before checking them, and ignores undeclared inputs', () => {
    const g = sdGraph();
    g['3']!.inputs.steps = '12';
    g['3']!.inputs.cfg = '7.5';
    g['3']!.inputs.not_an_input = 'whatever';
    expect(validateGraph(g, info).ok).toBe(true);
  });

  it('accepts missing optional inputs and {__value__} literals', () => {
    const g = fluxGgufGraph();
    g['11'] = { class_type: 'ReferenceLatent', inputs: { conditioning: ['4', 0] }, _meta: { title: 'ref' } };
    g['5']!.inputs.conditioning = ['11', 0];
    g['5']!.inputs.guidance = { __value__: [2.5] } as unknown as number;
    // A list is not a FLOAT: conversion fails like float([2.5]) does.
    const v = failed(validateGraph(g, info));
    expect(nodeError(v, '5').errors[0]).toMatchObject({ type: 'invalid_input_type', extra_info: { input_name: 'guidance' } });
    g['5']!.inputs.guidance = 2.5;
    expect(validateGraph(g, info).ok).toBe(true);
  });
});

describe('validateGraph: prompt-level errors', () => {
  it('missing_node_type for an unknown class, with node id, class and title', () => {
    const g = sdGraph();
    g['7'] = { class_type: 'NopeNode', inputs: {}, _meta: { title: 'My Nope' } };
    expect(validateGraph(g, info)).toEqual({
      ok: false,
      error: {
        type: 'missing_node_type',
        message: "Node 'My Nope' not found. The custom node may not be installed.",
        details: "Node ID '#7'",
        extra_info: { node_id: '7', class_type: 'NopeNode', node_title: 'My Nope' },
      },
      nodeErrors: {},
    });
  });

  it('missing_node_type for a node without class_type', () => {
    const v = failed(validateGraph({ '1': { inputs: {} } }, info));
    expect(v.error).toMatchObject({ type: 'missing_node_type', extra_info: { node_id: '1', class_type: null, node_title: null } });
  });

  it('prompt_no_outputs when no output node exists (or none is targeted)', () => {
    const g = sdGraph();
    delete g['9'];
    expect(failed(validateGraph(g, info)).error).toEqual({ type: 'prompt_no_outputs', message: 'Prompt has no outputs', details: '', extra_info: {} });
    expect(failed(validateGraph(sdGraph(), info, { partialExecutionTargets: ['8'] })).error.type).toBe('prompt_no_outputs');
    expect(validateGraph(sdGraph(), info, { partialExecutionTargets: ['9'] }).ok).toBe(true);
  });

  it('rejects a non-object prompt', () => {
    expect(failed(validateGraph([], info)).error.type).toBe('invalid_prompt');
  });
});

describe('validateGraph: per-input errors', () => {
  it('required_input_missing; downstream nodes are not listed; details list only the output\'s own errors', () => {
    const g = sdGraph();
    delete g['3']!.inputs.seed;
    const v = failed(validateGraph(g, info));
    expect(v.error).toEqual({ type: 'prompt_outputs_failed_validation', message: 'Prompt outputs failed validation', details: '', extra_info: {} });
    expect(v.nodeErrors).toEqual({
      '3': {
        errors: [{ type: 'required_input_missing', message: 'Required input is missing', details: 'seed', extra_info: { input_name: 'seed' } }],
        dependent_outputs: ['9'],
        class_type: 'KSampler',
      },
    });
  });

  it("the output node's own errors appear in the top-level details", () => {
    const g = sdGraph();
    delete g['9']!.inputs.filename_prefix;
    expect(failed(validateGraph(g, info)).error.details).toBe('Required input is missing: filename_prefix');
  });

  it('bad_linked_input for a link that is not [id, slot]', () => {
    const g = sdGraph();
    g['8']!.inputs.vae = ['4'] as unknown as [string, number];
    expect(nodeError(validateGraph(g, info), '8').errors[0]).toEqual({
      type: 'bad_linked_input',
      message: 'Bad linked input, must be a length-2 list of [node_id, slot_index]',
      details: 'vae',
      extra_info: { input_name: 'vae', input_config: ['VAE', { tooltip: 'The VAE model used for decoding the latent.' }], received_value: ['4'] },
    });
  });

  it('return_type_mismatch for a link to an output of another type', () => {
    const g = sdGraph();
    g['3']!.inputs.model = ['4', 1];
    expect(nodeError(validateGraph(g, info), '3').errors[0]).toEqual({
      type: 'return_type_mismatch',
      message: 'Return type mismatch between linked nodes',
      details: 'model, received_type(CLIP) mismatch input_type(MODEL)',
      extra_info: { input_name: 'model', input_config: info.KSampler!.input.required!.model, received_type: 'CLIP', linked_node: ['4', 1] },
    });
  });

  it('type matching: exact, * wildcard, comma-separated lists; a V1 combo never matches a link', () => {
    expect(validateNodeInput('MODEL', 'MODEL')).toBe(true);
    expect(validateNodeInput('*', 'MODEL')).toBe(true);
    expect(validateNodeInput('IMAGE', '*')).toBe(true);
    expect(validateNodeInput('IMAGE,MASK', 'MASK')).toBe(true);
    expect(validateNodeInput('LATENT', 'IMAGE, MASK')).toBe(false);
    expect(validateNodeInput('STRING', ['a', 'b'])).toBe(false);
    expect(validateNodeInput('*', ['a', 'b'])).toBe(false);
  });

  it('invalid_input_type when conversion fails', () => {
    const g = sdGraph();
    g['3']!.inputs.steps = 'abc';
    g['3']!.inputs.cfg = null;
    expect(nodeError(validateGraph(g, info), '3').errors).toEqual([
      {
        type: 'invalid_input_type',
        message: 'Failed to convert an input value to a INT value',
        details: "steps, abc, invalid literal for int() with base 10: 'abc'",
        extra_info: {
          input_name: 'steps',
          input_config: info.KSampler!.input.required!.steps,
          received_value: 'abc',
          exception_message: "invalid literal for int() with base 10: 'abc'",
        },
      },
      expect.objectContaining({ type: 'invalid_input_type', message: 'Failed to convert an input value to a FLOAT value' }),
    ]);
  });

  it('value_smaller_than_min / value_bigger_than_max with Python-formatted numbers', () => {
    const g = sdGraph();
    g['3']!.inputs.steps = 0;
    g['3']!.inputs.cfg = 100.5;
    g['3']!.inputs.denoise = '-0.5';
    const errors = nodeError(validateGraph(g, info), '3').errors;
    expect(errors.map((e) => [e.type, e.message, e.details, e.extra_info.received_value])).toEqual([
      ['value_smaller_than_min', 'Value 0 smaller than min of 1', 'steps', 0],
      ['value_bigger_than_max', 'Value 100.5 bigger than max of 100.0', 'cfg', 100.5],
      ['value_smaller_than_min', 'Value -0.5 smaller than min of 0.0', 'denoise', -0.5],
    ]);
  });

  it('value_not_in_list: short lists printed like Python, long ones summarised with input_config null', () => {
    const g = sdGraph();
    g['3']!.inputs.scheduler = 'bogus';
    g['3']!.inputs.sampler_name = 'euler_a';
    const errors = nodeError(validateGraph(g, info), '3').errors;
    const samplers = comboOptions(info.KSampler!.input.required!.sampler_name!)!;
    expect(samplers.length).toBeGreaterThan(20);
    expect(errors).toEqual([
      {
        type: 'value_not_in_list',
        message: 'Value not in list',
        details: `sampler_name: 'euler_a' not in (list of length ${samplers.length})`,
        extra_info: { input_name: 'sampler_name', input_config: null, received_value: 'euler_a' },
      },
      {
        type: 'value_not_in_list',
        message: 'Value not in list',
        details: "scheduler: 'bogus' not in ['simple', 'sgm_uniform', 'karras', 'exponential', 'ddim_uniform', 'beta', 'normal', 'linear_quadratic', 'kl_optimal']",
        extra_info: { input_name: 'scheduler', input_config: info.KSampler!.input.required!.scheduler, received_value: 'bogus' },
      },
    ]);
  });

  it('value_not_in_list for model files (V1 1-tuple combo)', () => {
    const g = fluxGgufGraph();
    g['1']!.inputs.unet_name = 'flux1-dev-Q4_0.gguf';
    const e = nodeError(validateGraph(g, info), '1').errors[0]!;
    expect(e.type).toBe('value_not_in_list');
    expect(e.details).toBe(
      "unet_name: 'flux1-dev-Q4_0.gguf' not in ['flux1-dev-Q8_0.gguf', 'flux1-kontext-dev-Q8_0.gguf', 'flux1-schnell-Q8_0.gguf', 'qwen-image-Q8_0.gguf', 'qwen-image-edit-2509-Q8_0.gguf']",
    );
  });

  it('LoadImage: custom_validation_failed for a missing file, and no combo check', () => {
    const g = sdGraph();
    g['10'] = { class_type: 'LoadImage', inputs: { image: 'sub/not-listed.png' }, _meta: { title: 'Load Image' } };
    g['11'] = { class_type: 'VAEEncode', inputs: { pixels: ['10', 0], vae: ['4', 2] }, _meta: { title: 'enc' } };
    g['3']!.inputs.latent_image = ['11', 0];
    // Not in the combo list, but the file exists: accepted (VALIDATE_INPUTS replaces the combo check).
    expect(validateGraph(g, info, { fileExists: (n) => n === 'sub/not-listed.png' }).ok).toBe(true);
    // Without a file check (client side before upload) the reference is not judged.
    expect(validateGraph(g, info).ok).toBe(true);
    const v = failed(validateGraph(g, info, { fileExists: () => false }));
    expect(v.nodeErrors).toEqual({
      '10': {
        errors: [
          {
            type: 'custom_validation_failed',
            message: 'Custom validation failed for node',
            details: 'image - Invalid image file: sub/not-listed.png',
            extra_info: { input_name: 'image' },
          },
        ],
        dependent_outputs: ['9'],
        class_type: 'LoadImage',
      },
    });
  });

  it('dependency_cycle (Kontext guidance before the reference latent)', () => {
    const g = fluxGgufGraph();
    g['11'] = { class_type: 'ReferenceLatent', inputs: { conditioning: ['5', 0], latent: ['7', 0] }, _meta: { title: 'ref' } };
    g['5']!.inputs.conditioning = ['11', 0];
    g['8']!.inputs.positive = ['5', 0];
    const v = failed(validateGraph(g, info));
    expect(v.error.type).toBe('prompt_outputs_failed_validation');
    const e = nodeError(v, '5').errors[0]!;
    expect(e.type).toBe('dependency_cycle');
    expect((e.extra_info.cycle_nodes as string[]).slice().sort()).toEqual(['11', '5']);
    expect(nodeError(v, '5').dependent_outputs).toEqual(['10']);
    expect(Object.keys(v.nodeErrors).sort()).toEqual(['11', '5']);
  });

  it('partial success: one valid output means ok, with the other output\'s errors in nodeErrors', () => {
    const g = sdGraph();
    g['12'] = { class_type: 'VAEDecode', inputs: { samples: ['3', 0], vae: ['4', 5] }, _meta: { title: 'bad decode' } };
    g['13'] = { class_type: 'SaveImage', inputs: { images: ['12', 0], filename_prefix: 'b' }, _meta: { title: 'save b' } };
    const v = validateGraph(g, info);
    expect(v.ok).toBe(true);
    if (!v.ok) return;
    expect(v.outputs).toEqual(['9']);
    expect(v.nodeErrors['12']).toMatchObject({
      errors: [{ type: 'exception_during_inner_validation', details: 'tuple index out of range' }],
      dependent_outputs: ['13'],
      class_type: 'VAEDecode',
    });
  });

  it('links to missing nodes raise inside validation (exception_during_validation on an output)', () => {
    const g = sdGraph();
    g['9']!.inputs.images = ['99', 0];
    const v = failed(validateGraph(g, info));
    expect(nodeError(v, '9').errors[0]).toMatchObject({ type: 'exception_during_validation', details: "'99'", extra_info: { exception_type: 'KeyError' } });
    expect(v.error.details).toBe("Exception when validating node: '99'");
  });

  it('every failing output is reported, each node once', () => {
    const g = sdGraph();
    g['3']!.inputs.steps = -1;
    g['14'] = { class_type: 'PreviewImage', inputs: { images: ['8', 0] }, _meta: { title: 'preview' } };
    const v = failed(validateGraph(g, info));
    expect(nodeError(v, '3').dependent_outputs.sort()).toEqual(['14', '9']);
    expect(Object.keys(v.nodeErrors)).toEqual(['3']);
  });
});
