/**
 * The client's pre-submit check against the recorded real `/object_info` (tools/fake-comfyui/fixtures/object_info.json):
 * it refuses only for an absent node class or a model file missing from its loader's list, and only where
 * ComfyUI itself would refuse the prompt for it; everything else passes through to ComfyUI.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import type { ComfyGraph } from '../../src/comfyui/graph.ts';
import { objectInfoSchema, comboOptions, parseNodeInfo } from '../../src/comfyui/object-info.ts';
import { missingModelFiles, preflightGraph, type Preflight } from '../../src/comfyui/preflight.ts';
import { OBJECT_INFO_FIXTURE_URL } from '../../tools/fake-comfyui/fixture.ts';

const info = objectInfoSchema.parse(JSON.parse(readFileSync(OBJECT_INFO_FIXTURE_URL, 'utf8')));
const golden = (): ComfyGraph => JSON.parse(readFileSync(new URL('../golden/imagegen-flux-schnell-txt2img.json', import.meta.url), 'utf8')) as ComfyGraph;

const modelFree = (prefix = 'mf'): ComfyGraph => ({
  load: { class_type: 'LoadImage', inputs: { image: 'example.png' }, _meta: { title: 'Load Image' } },
  scale: {
    class_type: 'ImageScale',
    inputs: { image: ['load', 0], upscale_method: 'nearest-exact', width: 48, height: 40, crop: 'disabled' },
    _meta: { title: 'Upscale Image' },
  },
  save: { class_type: 'SaveImage', inputs: { images: ['scale', 0], filename_prefix: prefix }, _meta: { title: 'Save Image' } },
});

function refused(v: Preflight): Extract<Preflight, { ok: false }> {
  expect(v.ok).toBe(false);
  if (v.ok) throw new Error('unreachable');
  return v;
}

describe('the recorded /object_info as the client reads it', () => {
  it('keeps every node class, the V3 ones with display_name null among them', () => {
    expect(Object.keys(info)).toHaveLength(893);
    for (const cls of ['FluxGuidance', 'EmptySD3LatentImage', 'FluxKontextImageScale', 'TextEncodeQwenImageEditPlus', 'Wan22ImageToVideoLatent']) {
      expect(info[cls], cls).toBeDefined();
      expect(info[cls]!.display_name, cls).toBeNull();
    }
  });

  it('reads combo values in the V1, V3 COMBO and dynamic-combo shapes', () => {
    expect(comboOptions(info.UnetLoaderGGUF!.input.required!.unet_name!)).toContain('flux1-schnell-Q8_0.gguf');
    expect(comboOptions(info.TripleCLIPLoader!.input.required!.clip_name1!)).toContain('t5xxl_fp8_e4m3fn.safetensors');
    expect(comboOptions(info.SaveVideo!.input.required!.format!)).toEqual(['auto', 'mp4', 'mkv', 'webm']);
  });

  it('a node whose used parts are unreadable still counts as present', () => {
    const problems: string[] = [];
    const node = parseNodeInfo('Odd', { input: { required: { a: 'INT', b: ['INT'] } }, output: null, output_node: 'yes', display_name: 3 }, problems);
    expect(node).toMatchObject({ name: 'Odd', input: { required: { b: ['INT'] } }, output: [], output_node: false, display_name: 3 });
    expect(problems).toEqual(['input.required.a: not a non-empty list', 'output: not a list', 'output_node: not a boolean']);
    expect(preflightGraph({ n: { class_type: 'Odd', inputs: {} } }, { Odd: node }).ok).toBe(true);
  });
});

describe('preflightGraph refuses on definite facts', () => {
  it('accepts a golden graph as built', () => {
    expect(preflightGraph(golden(), info)).toEqual({ ok: true });
  });

  it('an absent node class, even in a node no output uses', () => {
    const g = { ...modelFree(), lone: { class_type: 'NotInstalledNode', inputs: {}, _meta: { title: 'Not Installed' } } };
    const v = refused(preflightGraph(g, info));
    expect(v.error).toEqual({
      type: 'missing_node_type',
      message: "Node 'Not Installed' (NotInstalledNode) is not installed on this ComfyUI",
      details: "Node ID '#lone'",
      extra_info: { node_id: 'lone', class_type: 'NotInstalledNode', node_title: 'Not Installed' },
    });
    expect(v.problems.map((p) => p.nodeId)).toEqual(['lone']);
  });

  it('a node without class_type', () => {
    const g = modelFree();
    delete (g.scale as { class_type?: string }).class_type;
    const v = refused(preflightGraph(g, info));
    expect(v.problems).toEqual([{ type: 'missing_node_type', nodeId: 'scale', classType: null, message: "Node 'Upscale Image' has no class_type" }]);
  });

  it('a model file missing from a V1 loader list that the only output depends on', () => {
    const g = golden();
    g.unet!.inputs.unet_name = 'not-installed-Q8_0.gguf';
    const v = refused(preflightGraph(g, info));
    expect(v.error.type).toBe('prompt_outputs_failed_validation');
    expect(v.nodeErrors).toEqual({
      unet: {
        errors: [
          {
            type: 'value_not_in_list',
            message: 'Value not in list',
            details: "unet_name: model file 'not-installed-Q8_0.gguf' is not in UnetLoaderGGUF's list on this ComfyUI",
            extra_info: { input_name: 'unet_name', received_value: 'not-installed-Q8_0.gguf' },
          },
        ],
        dependent_outputs: ['save'],
        class_type: 'UnetLoaderGGUF',
      },
    });
  });

  it('a model file missing from a V3 COMBO loader list', () => {
    const g: ComfyGraph = {
      clip: {
        class_type: 'TripleCLIPLoader',
        inputs: { clip_name1: 'clip_l.safetensors', clip_name2: 'gone.safetensors', clip_name3: 't5xxl_fp8_e4m3fn.safetensors' },
        _meta: { title: 'clip' },
      },
      enc: { class_type: 'CLIPTextEncode', inputs: { text: 'x', clip: ['clip', 0] }, _meta: { title: 'enc' } },
      // No output node takes CONDITIONING; a lone output would not depend on the loader. PreviewAny takes anything.
      show: { class_type: 'PreviewAny', inputs: { source: ['enc', 0] }, _meta: { title: 'show' } },
    };
    expect(info.PreviewAny?.output_node).toBe(true);
    const v = refused(preflightGraph(g, info));
    expect(v.problems.map((p) => [p.nodeId, p.input, p.value])).toEqual([['clip', 'clip_name2', 'gone.safetensors']]);
  });
});

describe('preflightGraph leaves everything else to ComfyUI', () => {
  it('a missing model file in a loader no output depends on (ComfyUI never validates it)', () => {
    const g = { ...modelFree(), vae: { class_type: 'VAELoader', inputs: { vae_name: 'gone.safetensors' }, _meta: { title: 'vae' } } };
    expect(preflightGraph(g, info).ok).toBe(true);
    // The contract still reports it: an operator would want the file.
    expect(missingModelFiles(g, info).map((p) => p.nodeId)).toEqual(['vae']);
  });

  it('a missing model file on one output while another output is valid (ComfyUI queues the valid one)', () => {
    const g = { ...golden(), ...modelFree('ok') };
    g.vae!.inputs.vae_name = 'gone.safetensors';
    expect(preflightGraph(g, info).ok).toBe(true);
  });

  it('a model file reached only through an input the node does not declare', () => {
    const g = modelFree();
    g.vae = { class_type: 'VAELoader', inputs: { vae_name: 'gone.safetensors' }, _meta: { title: 'vae' } };
    g.save!.inputs.not_declared = ['vae', 0];
    expect(preflightGraph(g, info).ok).toBe(true);
  });

  it.each([
    ['a wrong combo value that is not a model file', (g: ComfyGraph) => void (g.scale!.inputs.upscale_method = 'bogus')],
    ['a value out of range', (g: ComfyGraph) => void (g.scale!.inputs.width = -5)],
    ['a value of the wrong type', (g: ComfyGraph) => void (g.scale!.inputs.width = 'abc')],
    ['a missing required input', (g: ComfyGraph) => void delete g.scale!.inputs.upscale_method],
    ['a link of the wrong type', (g: ComfyGraph) => void (g.scale!.inputs.image = ['load', 1])],
    ['a link to an absent node', (g: ComfyGraph) => void (g.scale!.inputs.image = ['nowhere', 0])],
    ['a LoadImage file that is not in its list', (g: ComfyGraph) => void (g.load!.inputs.image = 'not-uploaded.png')],
    ['a dependency cycle', (g: ComfyGraph) => void (g.scale!.inputs.image = ['scale', 0])],
    ['no output node', (g: ComfyGraph) => void delete g.save],
  ])('%s', (_name, mutate) => {
    const g = modelFree();
    mutate(g);
    expect(preflightGraph(g, info)).toEqual({ ok: true });
  });

  it('something that is not a graph', () => {
    expect(preflightGraph([], info)).toEqual({ ok: true });
    expect(preflightGraph(null, info)).toEqual({ ok: true });
  });
});
