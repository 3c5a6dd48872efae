/**
 * A render on a model configured for the sglang engine, against a ComfyUI without SGLang's plugin (absent, or
 * failed to import for lack of `sglang`): the pre-submit check refuses it before anything is queued, with a
 * non-retryable failure naming the plugin and the likely cause. With the plugin's nodes, the same graph passes.
 */
import { readFileSync } from 'node:fs';
import { ApplicationFailure } from '@temporalio/activity';
import { describe, expect, it } from 'vitest';
import { ObjectInfoCache } from '../../src/activities/object-info-cache.ts';
import { validateBeforeSubmit } from '../../src/activities/presubmit.ts';
import type { ComfyClient } from '../../src/comfyui/client.ts';
import type { ComfyGraph } from '../../src/comfyui/graph.ts';
import { objectInfoSchema } from '../../src/comfyui/object-info.ts';
import { loadRawObjectInfo } from '../../tools/fake-comfyui/fixture.ts';
import { withSgldPlugin } from '../../tools/fake-comfyui/sgld-plugin.ts';

const graph = JSON.parse(readFileSync(new URL('../golden/sglang/imagegen-flux-dev-txt2img.json', import.meta.url), 'utf8')) as ComfyGraph;
const backend = { id: 'b1', url: 'http://gpu:8188', taskQueue: 'q' };
const client = (raw: ReturnType<typeof loadRawObjectInfo>) => ({ objectInfo: async () => objectInfoSchema.parse(raw) }) as unknown as ComfyClient;

describe('sglang engine without the plugin', () => {
  it('fails fast, non-retryable, naming the plugin and the likely cause', async () => {
    const err = (await validateBeforeSubmit(client(loadRawObjectInfo()), { graph, backend }, new ObjectInfoCache()).catch(
      (e: unknown) => e,
    )) as ApplicationFailure;
    expect(err).toBeInstanceOf(ApplicationFailure);
    expect(err.nonRetryable).toBe(true);
    expect(err.type).toBe('ComfyValidation');
    const lines = err.message.split('\n');
    expect(lines[0]).toBe('ComfyUI at http://gpu:8188 cannot run this graph:');
    expect(lines[1]).toMatch(
      /^node sgld_options: Node 'SGLD options' \(SGLDOptions\) is not installed on this ComfyUI: it comes from custom node ComfyUI_SGLDiffusion/,
    );
    expect(lines[1]).toMatch(/likely cause: .*without `pip install sglang\[diffusion\]` in ComfyUI's Python the start-up log says IMPORT FAILED/);
    expect(err.details?.[0]).toMatchObject({ nodeId: 'sgld_options', nodeType: 'SGLDOptions', error: { type: 'missing_node_type' } });
  });

  it('passes with the plugin installed', async () => {
    await expect(validateBeforeSubmit(client(withSgldPlugin(loadRawObjectInfo())), { graph, backend }, new ObjectInfoCache())).resolves.toBeUndefined();
  });
});
