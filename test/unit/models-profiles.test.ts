import { afterEach, describe, expect, it } from 'vitest';
import { existsSync, mkdtempSync, readdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  applyModelOverrides,
  getProfile,
  listProfiles,
  loadModelOverrides,
  parseModelOverrides,
  registerProfile,
  resetModelOverrides,
  resolveModel,
  unregisterProfile,
} from '../../src/models/registry.ts';
import { familyBuilder } from '../../src/models/families/index.ts';

afterEach(() => resetModelOverrides());

describe('model profiles', () => {
  it('lists every profile file (src/models/profiles and family folders), image models first, then video models, each by id', () => {
    const families = new URL('../../src/models/families/', import.meta.url);
    const dirs = [
      new URL('../../src/models/profiles/', import.meta.url),
      ...readdirSync(families, { withFileTypes: true })
        .filter((e) => e.isDirectory() && existsSync(new URL(`${e.name}/profiles/`, families)))
        .map((e) => new URL(`${e.name}/profiles/`, families)),
    ];
    const files = dirs.flatMap((d) => readdirSync(d).filter((f) => f.endsWith('.ts')));
    const ids = listProfiles().map((p) => p.id);
    expect(ids).toHaveLength(files.length);
    expect(new Set(ids).size).toBe(ids.length);
    const images = listProfiles()
      .filter((p) => !p.kinds.includes('video'))
      .map((p) => p.id);
    const videos = listProfiles()
      .filter((p) => p.kinds.includes('video'))
      .map((p) => p.id);
    expect(ids).toEqual([...[...images].sort(), ...[...videos].sort()]);
    // The built-in models the rest of this file describes are among them.
    expect(ids).toEqual(expect.arrayContaining(['imagegen-flux-dev', 'imagegen-qwen-image-edit', 'videogen-wan22-5b', 'videogen-minimax-h3']));
  });

  it('flux-dev: cfg 1, guidance 3.5, 20 steps, euler/simple, 512², GGUF files', () => {
    const p = getProfile('imagegen-flux-dev')!;
    expect(p.defaults).toEqual({ steps: 20, cfg: 1, guidance: 3.5, sampler: 'euler', scheduler: 'simple', width: 512, height: 512 });
    expect(p.cfgMode).toBe('fixed-1');
    expect(p.family).toBe('flux');
    expect(p.kinds).toEqual(['txt2img', 'img2img']);
    expect(p.files).toEqual({
      unet: 'flux1-dev-Q8_0.gguf',
      t5: 't5xxl_fp8_e4m3fn.safetensors',
      clipL: 'clip_l.safetensors',
      vae: 'ae.safetensors',
      controlnet: 'flux1-dev-controlnet-union-pro.safetensors',
      redux: 'flux1-redux-dev.safetensors',
      clipVision: 'sigclip_vision_patch14_384.safetensors',
    });
  });

  it('flux-schnell: cfg 1, 4 steps, euler/simple, no guidance', () => {
    const p = getProfile('imagegen-flux-schnell')!;
    expect(p.defaults).toEqual({ steps: 4, cfg: 1, sampler: 'euler', scheduler: 'simple', width: 512, height: 512 });
    expect(p.files.unet).toBe('flux1-schnell-Q8_0.gguf');
  });

  it('flux-kontext: edit only, cfg 1, guidance 2.5, 20 steps', () => {
    const p = getProfile('imagegen-flux-kontext')!;
    expect(p.kinds).toEqual(['edit', 'txt2img']);
    expect(p.defaults).toMatchObject({ steps: 20, cfg: 1, guidance: 2.5, width: 512, height: 512 });
    expect(p.files.unet).toBe('flux1-kontext-dev-Q8_0.gguf');
    expect(p.maxExtraImages).toBeGreaterThanOrEqual(2);
  });

  it('qwen-image: cfg 2.5, 40 steps, euler/simple, shift 3.1, VL text encoder', () => {
    const p = getProfile('imagegen-qwen-image')!;
    expect(p.defaults).toEqual({ steps: 40, cfg: 2.5, sampler: 'euler', scheduler: 'simple', shift: 3.1, width: 512, height: 512 });
    expect(p.cfgMode).toBe('free');
    expect(p.files).toEqual({
      unet: 'qwen-image-Q8_0.gguf',
      textEncoder: 'qwen_2.5_vl_7b_fp8_scaled.safetensors',
      vae: 'qwen_image_vae.safetensors',
      diffsynthCanny: 'qwen_image_canny_diffsynth_controlnet.safetensors',
      diffsynthDepth: 'qwen_image_depth_diffsynth_controlnet.safetensors',
      diffsynthInpaint: 'qwen_image_inpaint_diffsynth_controlnet.safetensors',
    });
  });

  it('qwen-image-edit: edit only, cfg 2.5, up to 3 images, full VL encoder', () => {
    const p = getProfile('imagegen-qwen-image-edit')!;
    expect(p.kinds).toEqual(['edit', 'txt2img']);
    expect(p.defaults).toMatchObject({ cfg: 2.5, steps: 40, sampler: 'euler', scheduler: 'simple' });
    expect(p.maxExtraImages).toBe(3);
    expect(p.files.unet).toBe('qwen-image-edit-2509-Q8_0.gguf');
    expect(p.files.textEncoder).toBe('qwen_2.5_vl_7b_fp8_scaled.safetensors');
  });

  it('every profile: a grid of whole latent cells, sane limits, builder supports its kinds and reads its files', () => {
    for (const p of listProfiles()) {
      // Latents are 8 px per cell; a family may need more (Flux/Qwen 16, Wan 32: VAE stride × patch).
      expect(p.grid % 8).toBe(0);
      if (p.family === 'wan22') expect(p.grid).toBe(32);
      expect(p.maxSide % p.grid).toBe(0);
      expect(p.minSide % p.grid).toBe(0);
      expect(p.stallTimeoutMs).toBeGreaterThan(60_000);
      expect(p.deadlineMs).toBeGreaterThan(p.stallTimeoutMs);
      const b = familyBuilder(p.family);
      for (const k of p.kinds) expect(b.kinds).toContain(k);
      // Every file is a role the builder reads; every role but the optional ones (control files) is set.
      for (const role of Object.keys(p.files)) expect(b.fileRoles).toContain(role);
      const required = b.fileRoles.filter((r) => !(b.optionalFileRoles ?? []).includes(r));
      expect(
        Object.keys(p.files)
          .filter((r) => required.includes(r))
          .sort(),
      ).toEqual([...required].sort());
    }
  });

  it('a profile added at run time is served like a built-in one and checked the same way', () => {
    const base = getProfile('imagegen-flux-dev')!;
    const extra = { ...base, id: 'imagegen-test-extra', title: 'Test extra', aliases: ['test-extra'], files: { ...base.files, unet: 'test-extra.gguf' } };
    registerProfile(extra);
    try {
      expect(resolveModel('test-extra')?.id).toBe('imagegen-test-extra');
      expect(resolveModel('test-extra.gguf')?.id).toBe('imagegen-test-extra');
      expect(listProfiles().map((p) => p.id)).toContain('imagegen-test-extra');
      // Operator overrides reach it too.
      applyModelOverrides({ 'imagegen-test-extra': { defaults: { steps: 7 } } });
      expect(getProfile('imagegen-test-extra')!.defaults.steps).toBe(7);
      expect(() => registerProfile(extra)).toThrow(/already registered/);
    } finally {
      unregisterProfile('imagegen-test-extra');
    }
    expect(getProfile('imagegen-test-extra')).toBeUndefined();
    expect(() => registerProfile({ ...extra, family: 'no-such-family' })).toThrow(/unknown model family "no-such-family"/);
    expect(() => registerProfile({ ...extra, kinds: ['video'] })).toThrow(/does not render video/);
    expect(() => registerProfile({ ...extra, files: { ...extra.files, lora: 'x.safetensors' } })).toThrow(/files\.lora: unknown file role/);
    const h3 = getProfile('videogen-minimax-h3')!;
    expect(() => registerProfile({ ...h3, id: 'videogen-test', video: { ...h3.video!, tasks: ['t2v'] } })).toThrow(/video task t2v/);
  });

  it('profiles are frozen', () => {
    const p = getProfile('imagegen-flux-dev')!;
    expect(Object.isFrozen(p)).toBe(true);
    expect(Object.isFrozen(p.files)).toBe(true);
  });
});

describe('resolveModel', () => {
  it.each([
    ['imagegen-flux-dev', 'imagegen-flux-dev'],
    ['IMAGEGEN-FLUX-DEV', 'imagegen-flux-dev'],
    ['FLUX.1-dev', 'imagegen-flux-dev'],
    ['flux-dev', 'imagegen-flux-dev'],
    ['FLUX.1-dev [0123456789]', 'imagegen-flux-dev'],
    ['imagegen-flux-schnell [abcdef0123]', 'imagegen-flux-schnell'],
    ['flux1-dev-Q8_0.gguf', 'imagegen-flux-dev'],
    ['flux1-schnell-Q8_0', 'imagegen-flux-schnell'],
    ['kontext', 'imagegen-flux-kontext'],
    ['Qwen-Image', 'imagegen-qwen-image'],
    ['qwen-image-edit-2509', 'imagegen-qwen-image-edit'],
    ['  Qwen-Image-Edit-2509  ', 'imagegen-qwen-image-edit'],
  ])('%s → %s', (name, id) => {
    expect(resolveModel(name)?.id).toBe(id);
  });

  it('unknown names resolve to undefined', () => {
    expect(resolveModel('sd-v1-5')).toBeUndefined();
    expect(resolveModel('')).toBeUndefined();
  });
});

describe('model overrides', () => {
  it('overrides file names and defaults without touching other fields', () => {
    applyModelOverrides({
      'imagegen-flux-dev': { files: { unet: 'flux1-dev-Q4_K_S.gguf' }, defaults: { steps: 28 } },
    });
    const p = getProfile('imagegen-flux-dev')!;
    expect(p.files.unet).toBe('flux1-dev-Q4_K_S.gguf');
    expect(p.files.vae).toBe('ae.safetensors');
    expect(p.defaults.steps).toBe(28);
    expect(p.defaults.guidance).toBe(3.5);
    expect(resolveModel('flux1-dev-Q4_K_S')?.id).toBe('imagegen-flux-dev');
    resetModelOverrides();
    expect(getProfile('imagegen-flux-dev')!.files.unet).toBe('flux1-dev-Q8_0.gguf');
  });

  it('loads from a JSON file and resets without a path', () => {
    const dir = mkdtempSync(join(tmpdir(), 'models-'));
    const file = join(dir, 'models.json');
    writeFileSync(file, JSON.stringify({ 'imagegen-qwen-image': { files: { vae: 'other_vae.safetensors' }, stallTimeoutMs: 600000 } }));
    expect(loadModelOverrides(file)).toEqual({ 'imagegen-qwen-image': { files: { vae: 'other_vae.safetensors' }, stallTimeoutMs: 600000 } });
    expect(getProfile('imagegen-qwen-image')!.files.vae).toBe('other_vae.safetensors');
    expect(getProfile('imagegen-qwen-image')!.stallTimeoutMs).toBe(600000);
    expect(loadModelOverrides()).toEqual({});
    expect(getProfile('imagegen-qwen-image')!.files.vae).toBe('qwen_image_vae.safetensors');
  });

  it.each([
    [{ 'no-such-model': {} }, /unknown model "no-such-model"/],
    [{ 'imagegen-flux-dev': { files: { textEncoder: 'x' } } }, /imagegen-flux-dev\.files\.textEncoder: unknown file role/],
    [{ 'imagegen-flux-dev': { defaults: { sampler: 'Euler a' } } }, /defaults\.sampler/],
    [{ 'imagegen-flux-dev': { defaults: { scheduler: 'automatic' } } }, /defaults\.scheduler/],
    [{ 'imagegen-flux-dev': { defaults: { steps: 0 } } }, /imagegen-flux-dev\.defaults\.steps/],
    [{ 'imagegen-flux-dev': { defaults: { width: 520 } } }, /defaults\.width/],
    [{ 'imagegen-flux-dev': { unknownKey: 1 } }, /imagegen-flux-dev/],
    [{ 'imagegen-flux-dev': { files: { unet: '' } } }, /files\.unet/],
    [[1, 2], /./],
  ])('rejects invalid overrides %#', (json, re) => {
    expect(() => parseModelOverrides(json)).toThrow(re);
  });

  it('an invalid override leaves the previous state in place', () => {
    applyModelOverrides({ 'imagegen-flux-dev': { defaults: { steps: 30 } } });
    expect(() => applyModelOverrides({ 'imagegen-flux-dev': { defaults: { steps: -1 } } })).toThrow();
    expect(getProfile('imagegen-flux-dev')!.defaults.steps).toBe(30);
  });

  it('a missing or malformed file is an error naming it', () => {
    expect(() => loadModelOverrides('/nonexistent/models.json')).toThrow(/\/nonexistent\/models\.json/);
    const dir = mkdtempSync(join(tmpdir(), 'models-'));
    const file = join(dir, 'bad.json');
    writeFileSync(file, '{ not json');
    expect(() => loadModelOverrides(file)).toThrow(/bad\.json/);
  });
});

describe('Qwen-Image-Edit encoder rule', () => {
  it('refuses a GGUF text encoder override: edit needs the full VL encoder', async () => {
    const { parseModelOverrides } = await import('../../src/models/registry.ts');
    expect(() => parseModelOverrides({ 'imagegen-qwen-image-edit': { files: { textEncoder: 'Qwen2.5-VL-7B-Q8_0.gguf' } } })).toThrow(/full VL encoder/);
    expect(() => parseModelOverrides({ 'imagegen-qwen-image': { files: { textEncoder: 'Qwen2.5-VL-7B-Q8_0.gguf' } } })).not.toThrow();
  });
});
