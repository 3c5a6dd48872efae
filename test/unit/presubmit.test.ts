/**
 * The activity-side pre-submit check: a definite refusal is confirmed against a fresh `/object_info` (the
 * operator may just have installed the file), and a confirmed one is a non-retryable ComfyValidation
 * failure whose details name the node and input the way the front reports them.
 */
import { readFileSync } from 'node:fs';
import { ApplicationFailure } from '@temporalio/activity';
import { describe, expect, it } from 'vitest';
import { ObjectInfoCache } from '../../src/activities/object-info-cache.ts';
import { validateBeforeSubmit } from '../../src/activities/presubmit.ts';
import { failureFields } from '../../src/renders/render-service.ts';
import type { ComfyClient } from '../../src/comfyui/client.ts';
import type { ComfyGraph } from '../../src/comfyui/graph.ts';
import { objectInfoSchema, type ObjectInfo } from '../../src/comfyui/object-info.ts';
import { OBJECT_INFO_FIXTURE_URL } from '../../tools/fake-comfyui/fixture.ts';

const recorded = (): ObjectInfo => objectInfoSchema.parse(JSON.parse(readFileSync(OBJECT_INFO_FIXTURE_URL, 'utf8')));
const graph = JSON.parse(readFileSync(new URL('../golden/imagegen-flux-schnell-txt2img.json', import.meta.url), 'utf8')) as ComfyGraph;
const backend = { id: 'b1', url: 'http://gpu:8188' };

/** A client whose successive `/object_info` answers are given; counts the fetches. */
function clientAnswering(...answers: ObjectInfo[]): ComfyClient & { fetches: number } {
  const c = { fetches: 0, objectInfo: async () => answers[Math.min(c.fetches++, answers.length - 1)] };
  return c as unknown as ComfyClient & { fetches: number };
}

function withoutVae(info: ObjectInfo): ObjectInfo {
  const spec = info.VAELoader!.input.required!.vae_name!;
  spec[0] = (spec[0] as string[]).filter((f) => f !== 'ae.safetensors');
  return info;
}

describe('validateBeforeSubmit', () => {
  it('passes a graph whose nodes and files are there, from the cached /object_info', async () => {
    const cache = new ObjectInfoCache();
    const client = clientAnswering(recorded());
    await validateBeforeSubmit(client, { graph, backend }, cache);
    await validateBeforeSubmit(client, { graph, backend }, cache);
    expect(client.fetches).toBe(1);
  });

  it('a file missing from the cached copy but installed since: refetched, then passed', async () => {
    const cache = new ObjectInfoCache();
    const client = clientAnswering(withoutVae(recorded()), recorded());
    await validateBeforeSubmit(client, { graph, backend }, cache);
    expect(client.fetches).toBe(2);
  });

  it('a file missing from a fresh copy too: non-retryable ComfyValidation naming node and input', async () => {
    const client = clientAnswering(withoutVae(recorded()));
    const err = (await validateBeforeSubmit(client, { graph, backend }, new ObjectInfoCache()).catch((e: unknown) => e)) as ApplicationFailure;
    expect(err).toBeInstanceOf(ApplicationFailure);
    expect(err.type).toBe('ComfyValidation');
    expect(err.nonRetryable).toBe(true);
    expect(err.message).toBe(
      "ComfyUI at http://gpu:8188 cannot run this graph:\nnode vae: vae_name: model file 'ae.safetensors' is not in VAELoader's list on this ComfyUI",
    );
    expect(failureFields(err.details?.[0])).toEqual({
      node: 'vae',
      node_type: 'VAELoader',
      input: 'vae_name',
      comfy_message: "Value not in list: vae_name: model file 'ae.safetensors' is not in VAELoader's list on this ComfyUI",
    });
  });

  it('an absent node class: the node is named too', async () => {
    const info = recorded();
    delete info.UnetLoaderGGUF;
    const err = (await validateBeforeSubmit(clientAnswering(info), { graph, backend }, new ObjectInfoCache()).catch((e: unknown) => e)) as ApplicationFailure;
    expect(err.nonRetryable).toBe(true);
    expect(failureFields(err.details?.[0])).toMatchObject({ node: 'unet', node_type: 'UnetLoaderGGUF' });
    expect(failureFields(err.details?.[0]).comfy_message).toMatch(/UnetLoaderGGUF\) is not installed on this ComfyUI/);
  });
});
