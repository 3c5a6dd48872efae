/**
 * Models an operator chooses (issue 28): a model whose file the ComfyUI lacks is not offered by `/v1/models`,
 * `/sdapi/v1/sd-models` (and so the gallery) and `/health` says why, without failing /health or the models
 * that are there; MODELS_CONFIG `"enabled": false` switches a model off everywhere; a ComfyUI that does not
 * answer hides nothing.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { checkModelConfig } from '../../src/app/model-config.ts';
import { ConfigError } from '../../src/config/config.ts';
import { listProfiles, resetModelOverrides, resolveModel } from '../../src/models/registry.ts';
import { loadObjectInfoWithProfileFiles } from '../../tools/fake-comfyui/fixture.ts';
import { startTestFront, type TestFront } from '../support/front.ts';

const KREA = 'imagegen-flux-krea';
const KREA_FILE = 'flux1-krea-dev-Q8_0.gguf';

/** The recorded ComfyUI with every profile's files, less the Krea unet. */
function withoutKrea() {
  const info = loadObjectInfoWithProfileFiles();
  const unet = info.UnetLoaderGGUF!.input.required!.unet_name!;
  unet[0] = (unet[0] as string[]).filter((f) => f !== KREA_FILE);
  return info;
}

const ids = (body: Array<{ id?: string; model_name?: string }>) => body.map((m) => m.id ?? m.model_name);

let front: TestFront | undefined;
afterEach(async () => {
  await front?.close();
  front = undefined;
  resetModelOverrides();
});

function modelsConfig(json: unknown): string {
  const file = path.join(mkdtempSync(path.join(os.tmpdir(), 'models-config-')), 'models.json');
  writeFileSync(file, JSON.stringify(json));
  return file;
}

describe('model lists follow the ComfyUI', () => {
  it('a model whose file is missing is left out of /v1/models and sd-models, and /health names it without failing', async () => {
    const info = withoutKrea();
    front = await startTestFront({}, { objectInfo: async () => info });
    const openai = ids((await front.app.inject({ url: '/v1/models' })).json().data);
    expect(openai).not.toContain(KREA);
    expect(openai).toEqual(listProfiles().flatMap((p) => (p.id === KREA ? [] : [p.id])));
    const sd = ids((await front.app.inject({ url: '/sdapi/v1/sd-models' })).json());
    expect(sd).not.toContain(KREA);
    expect(sd).toContain('imagegen-flux-dev');

    const health = await front.app.inject({ url: '/health' });
    expect(health.statusCode).toBe(200);
    const models = health.json().models;
    expect(models.checked).toBe(true);
    expect(models.unusable).toEqual([{ id: KREA, reason: `model file ${KREA_FILE} is missing` }]);
    expect(models.available).toEqual(openai);
  });

  it('a ComfyUI that does not answer hides nothing (renders wait for it anyway)', async () => {
    front = await startTestFront(
      {},
      {
        objectInfo: async () => {
          throw new Error('connect ECONNREFUSED');
        },
      },
    );
    expect(ids((await front.app.inject({ url: '/v1/models' })).json().data)).toContain(KREA);
    const models = (await front.app.inject({ url: '/health' })).json().models;
    expect(models).toMatchObject({ checked: false, unusable: [] });
  });
});

describe('MODELS_CONFIG "enabled": false', () => {
  it('switches a model off: not listed, not resolved, reported as switched off', async () => {
    const info = withoutKrea();
    front = await startTestFront({}, { objectInfo: async () => info });
    checkModelConfig({
      MODELS_CONFIG: modelsConfig({ [KREA]: { enabled: false } }),
      DEFAULT_MODEL: 'imagegen-flux-dev',
      DEFAULT_VIDEO_MODEL: 'videogen-wan22-5b',
    });
    expect(resolveModel('krea')).toBeUndefined();
    expect(ids((await front.app.inject({ url: '/v1/models' })).json().data)).not.toContain(KREA);
    const health = (await front.app.inject({ url: '/health' })).json();
    expect(health.models.switched_off).toEqual([KREA]);
    expect(health.models.unusable).toEqual([]);
    const res = await front.app.inject({ method: 'POST', url: '/sdapi/v1/txt2img', payload: { prompt: 'x', model: KREA } });
    expect(res.statusCode).toBe(400);
    expect(res.json().detail ?? res.body).toMatch(new RegExp(KREA));
  });

  it('errors are one line naming the file and the field, as a ConfigError (no stack trace at start)', () => {
    const bad = modelsConfig({ [KREA]: { enabled: 'no' } });
    const attempt = () => checkModelConfig({ MODELS_CONFIG: bad, DEFAULT_MODEL: 'imagegen-flux-dev', DEFAULT_VIDEO_MODEL: 'videogen-wan22-5b' });
    expect(attempt).toThrow(ConfigError);
    expect(attempt).toThrow(`model overrides file ${bad}: ${KREA}.enabled: Invalid input: expected boolean, received string`);

    const offDefault = modelsConfig({ 'imagegen-flux-dev': { enabled: false } });
    expect(() => checkModelConfig({ MODELS_CONFIG: offDefault, DEFAULT_MODEL: 'imagegen-flux-dev', DEFAULT_VIDEO_MODEL: 'videogen-wan22-5b' })).toThrow(
      new RegExp(
        `^DEFAULT_MODEL=imagegen-flux-dev is switched off in MODELS_CONFIG ${offDefault.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}; set DEFAULT_MODEL to one of imagegen-`,
      ),
    );
  });
});
