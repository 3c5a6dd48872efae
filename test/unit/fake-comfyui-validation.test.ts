/**
 * The fake's own emulation of ComfyUI's validation on the V3 shapes of the recorded `/object_info`
 * (the V1 cases are held against the real server's answers by test/conformance/fake-vs-real.test.ts).
 */
import { describe, expect, it } from 'vitest';
import { loadRawObjectInfo } from '../../tools/fake-comfyui/fixture.ts';
import { validatePrompt } from '../../tools/fake-comfyui/validation.ts';
import { finalizedInputs } from '../../tools/fake-comfyui/node-schema.ts';

const info = loadRawObjectInfo();
const env = { objectInfo: info, fileExists: (ref: string) => ref === 'in.png' };
const load = { class_type: 'LoadImage', inputs: { image: 'in.png' } };
const save = (images: unknown) => ({ class_type: 'SaveImage', inputs: { images, filename_prefix: 'x' } });

describe('fake validation (V3 nodes)', () => {
  it('DynamicCombo: the selected option adds dot-path inputs; an absent combo is dropped, not refused', () => {
    const live = { video: ['v', 0], filename_prefix: 'video/ComfyUI', format: 'mp4', 'format.codec': 'h264' };
    expect([...finalizedInputs(info.SaveVideo!, live).inputs.keys()]).toEqual(['video', 'filename_prefix', 'format.codec', 'format']);
    const reencode = finalizedInputs(info.SaveVideo!, { ...live, 'format.codec.encoding': 're-encode' }).inputs;
    expect(reencode.get('format.codec.encoding.crf')).toMatchObject({ category: 'required', spec: ['FLOAT', expect.objectContaining({ max: 51 })] });
    expect(finalizedInputs(info.SaveVideo!, { video: ['v', 0] }).inputs.has('format')).toBe(false);

    const video = { class_type: 'CreateVideo', inputs: { images: ['load', 0], fps: 24 } };
    const ok = validatePrompt(
      { load, v: video, s: { class_type: 'SaveVideo', inputs: { video: ['v', 0], filename_prefix: 'video/ComfyUI', format: 'auto', 'format.codec': 'auto' } } },
      env,
      undefined,
    );
    expect(ok).toEqual({ ok: true, outputs: ['s'], nodeErrors: {} });
    const noFormat = validatePrompt(
      { load, v: video, s: { class_type: 'SaveVideo', inputs: { video: ['v', 0], filename_prefix: 'video/ComfyUI' } } },
      env,
      undefined,
    );
    expect(noFormat.ok).toBe(true);
    const missingCrf = validatePrompt(
      {
        load,
        v: video,
        s: {
          class_type: 'SaveVideo',
          inputs: {
            video: ['v', 0],
            filename_prefix: 'v',
            format: 'mp4',
            'format.codec': 'h264',
            'format.codec.encoding': 're-encode',
            'format.codec.encoding.color_space': 'auto',
          },
        },
      },
      env,
      undefined,
    );
    if (missingCrf.ok) throw new Error('expected a failure');
    expect(missingCrf.nodeErrors.s?.errors).toEqual([
      { type: 'required_input_missing', message: 'Required input is missing', details: 'crf', extra_info: { input_name: 'format.codec.encoding.crf' } },
    ]);
  });

  it('V3 COMBO: checks the options and reports ["COMBO", extra_info] (null past 20 options)', () => {
    const r = validatePrompt(
      { sel: { class_type: 'KSamplerSelect', inputs: { sampler_name: 'nope' } }, p: { class_type: 'PreviewAny', inputs: { source: ['sel', 0] } } },
      env,
      undefined,
    );
    if (r.ok) throw new Error('expected a failure');
    const err = r.nodeErrors.sel?.errors[0];
    expect(err).toMatchObject({ type: 'value_not_in_list', extra_info: { input_name: 'sampler_name', input_config: null, received_value: 'nope' } });
    expect(err?.details).toMatch(/^sampler_name: 'nope' not in \(list of length \d+\)$/);
  });

  it('Autogrow: required slots below min are named by their dot path, the detail by the last part', () => {
    const r = validatePrompt({ load, b: { class_type: 'BatchImagesNode', inputs: {} }, s: save(['b', 0]) }, env, undefined);
    if (r.ok) throw new Error('expected a failure');
    expect(r.nodeErrors.b?.errors).toEqual([
      { type: 'required_input_missing', message: 'Required input is missing', details: 'image0', extra_info: { input_name: 'images.image0' } },
    ]);
    const ok = validatePrompt({ load, b: { class_type: 'BatchImagesNode', inputs: { 'images.image0': ['load', 0] } }, s: save(['b', 0]) }, env, undefined);
    expect(ok.ok).toBe(true);
  });

  it('converts values in place, as the queued prompt shows', () => {
    const prompt = {
      load,
      sc: { class_type: 'ImageScale', inputs: { image: ['load', 0], upscale_method: 'area', width: '48', height: 40.9, crop: 'disabled' } },
      s: save(['sc', 0]),
    };
    expect(validatePrompt(prompt, env, undefined).ok).toBe(true);
    expect(prompt.sc.inputs).toMatchObject({ width: 48, height: 40 });
  });

  it('partial_execution_targets limits the outputs; Python exceptions outside validation are a crash', () => {
    const prompt = { load, a: save(['load', 0]), b: save(['load', 0]) };
    expect(validatePrompt(prompt, env, ['b'])).toMatchObject({ ok: true, outputs: ['b'] });
    expect(() => validatePrompt({ x: 'not a node' }, env, undefined)).toThrow();
    expect(validatePrompt([], env, undefined)).toMatchObject({ ok: false, error: { type: 'prompt_no_outputs' } });
  });
});
