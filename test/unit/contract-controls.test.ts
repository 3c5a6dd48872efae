/**
 * `comfy-durable contract` and the control files the families declare (src/models/families/controls.ts): the
 * ControlNet, Redux, CLIP-vision and DiffSynth files are profile roles, so a ComfyUI without one gets one line
 * naming the file, the loader input that lists it and the profiles whose control units need it. Optional: the
 * model still renders there (only those units are refused), so the line is `miss`, not a failure.
 */
import { describe, expect, it } from 'vitest';
import { profileChecks } from '../../src/cli/contract-profiles.ts';
import { objectInfoSchema } from '../../src/comfyui/object-info.ts';
import { listProfiles } from '../../src/models/registry.ts';
import { loadRawObjectInfo } from '../../tools/fake-comfyui/fixture.ts';

/** The recorded /object_info of the real ComfyUI: it lists the tiny control files that were installed. */
const recorded = () => loadRawObjectInfo();

function missing(raw: Record<string, unknown>): string[] {
  const results = profileChecks(listProfiles(), objectInfoSchema.parse(raw));
  // A ComfyUI without a control file still renders the models: no required line names one.
  const required = results.filter((r) => !r.ok && !r.optional).map((r) => r.name);
  expect(required.join('\n')).not.toMatch(/controlnet|redux|sigclip|diffsynth/);
  return results.filter((r) => !r.ok && r.optional && r.name.startsWith('control file')).map((r) => `${r.name}: ${r.detail ?? ''}`);
}

describe('contract, control files', () => {
  it('reports the control files the recorded server lacked, each with its loader input and the profiles needing it', () => {
    const lines = missing(recorded());
    expect(lines).toContain(
      'control file qwen_image_depth_diffsynth_controlnet.safetensors is missing: not in ModelPatchLoader.name; control units of imagegen-qwen-image that need it are refused',
    );
    expect(lines).toContain(
      'control file qwen_image_inpaint_diffsynth_controlnet.safetensors is missing: not in ModelPatchLoader.name; control units of imagegen-qwen-image that need it are refused',
    );
    // Installed there (the tiny files the executions were recorded with): not reported.
    expect(lines.join('\n')).not.toMatch(/flux1-dev-controlnet-union-pro|flux1-redux-dev|sigclip_vision_patch14_384|qwen_image_canny_diffsynth/);
  });

  it('a ComfyUI without the union ControlNet or Redux: one line each, naming every Flux-dev model', () => {
    const raw = recorded() as Record<string, { input: { required: Record<string, unknown[]> } }>;
    raw.ControlNetLoader!.input.required.control_net_name = [[]];
    raw.StyleModelLoader!.input.required.style_model_name = [[]];
    const lines = missing(raw);
    // The models declaring the file, from the registry: a model added in one file is named too.
    const needing = (file: string): string[] => listProfiles().flatMap((p) => (Object.values(p.files).includes(file) ? [p.id] : []));
    for (const file of ['flux1-dev-controlnet-union-pro.safetensors', 'flux1-redux-dev.safetensors']) {
      expect(needing(file)).toEqual(expect.arrayContaining(['imagegen-flux-dev', 'imagegen-flux-krea']));
    }
    expect(lines).toContain(
      `control file flux1-dev-controlnet-union-pro.safetensors is missing: not in ControlNetLoader.control_net_name; control units of ${needing('flux1-dev-controlnet-union-pro.safetensors').join(', ')} that need it are refused`,
    );
    expect(lines).toContain(
      `control file flux1-redux-dev.safetensors is missing: not in StyleModelLoader.style_model_name; control units of ${needing('flux1-redux-dev.safetensors').join(', ')} that need it are refused`,
    );
  });
});
