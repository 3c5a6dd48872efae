/**
 * Protocol contract checks for any ComfyUI URL, using only core nodes that need no model weights
 * (LoadImage → ImageScale → SaveImage), so they run against a real GPU box, a CPU-only ComfyUI, or the fake.
 * They cover what the durable pipeline relies on: `/object_info` readable as the client reads it, uploads and
 * their collision rule, client-chosen prompt ids, WebSocket following to `executing:null`, history outputs and
 * `/view`, validation errors with node errors, status reconciliation for unknown prompts, the queue.
 * Whether this ComfyUI has the nodes and model files of our model profiles is checked by the command
 * (src/cli/contract-profiles.ts): the client knows nothing of profiles.
 */
import { randomUUID } from 'node:crypto';
import { PNG } from 'pngjs';
import { ComfyClient } from './client.ts';
import { ComfyValidationError } from './errors.ts';
import { submitAndFollow } from './submit-and-follow.ts';
import type { ComfyGraph } from './graph.ts';
import { readPngSize } from './png-metadata.ts';
import { derivePromptId } from './prompt-id.ts';

export interface ContractResult {
  name: string;
  ok: boolean;
  detail?: string;
  /** Missing but not required: printed `miss`, not counted as a failure (a control file: only its units are refused). */
  optional?: boolean;
}

function testPng(width: number, height: number, seed: number): Buffer {
  const png = new PNG({ width, height });
  for (let i = 0; i < width * height; i++) {
    png.data[i * 4] = (i * 7 + seed) & 255;
    png.data[i * 4 + 1] = (i * 13 + seed * 3) & 255;
    png.data[i * 4 + 2] = (i * 29) & 255;
    png.data[i * 4 + 3] = 255;
  }
  return PNG.sync.write(png);
}

export function modelFreeGraph(image: string, width: number, height: number, prefix: string): ComfyGraph {
  return {
    load: { class_type: 'LoadImage', inputs: { image }, _meta: { title: 'Load Image' } },
    scale: {
      class_type: 'ImageScale',
      inputs: { image: ['load', 0], upscale_method: 'nearest-exact', width, height, crop: 'disabled' },
      _meta: { title: 'Upscale Image' },
    },
    save: { class_type: 'SaveImage', inputs: { images: ['scale', 0], filename_prefix: prefix }, _meta: { title: 'Save Image' } },
  };
}

export async function runContractChecks(baseUrl: string): Promise<ContractResult[]> {
  const client = new ComfyClient({ baseUrl });
  const results: ContractResult[] = [];
  const check = async (name: string, fn: () => Promise<string | void>): Promise<void> => {
    try {
      const detail = await fn();
      results.push(detail ? { name, ok: true, detail } : { name, ok: true });
    } catch (err) {
      results.push({ name, ok: false, detail: err instanceof Error ? err.message : String(err) });
    }
  };
  const must = (cond: unknown, message: string): void => {
    if (!cond) throw new Error(message);
  };
  const run = randomUUID().slice(0, 8);

  try {
    await check('system_stats answers', async () => {
      const caps = await client.capabilities();
      return `ComfyUI ${caps.version ?? '?'}, jobs API ${caps.jobsApi ? 'yes' : 'no'}`;
    });

    await check('object_info is readable (every node class kept, null cosmetic fields included)', async () => {
      const info = await client.objectInfo();
      const count = Object.keys(info).length;
      must(count > 0, 'no node classes');
      for (const core of ['LoadImage', 'ImageScale', 'SaveImage']) must(info[core], `core node ${core} missing`);
      return `${count} node classes`;
    });

    const filename = `contract-${run}.png`;
    const bytes = testPng(32, 24, 1);
    await check('upload is content-addressed (identical bytes keep the name, different bytes get a new one)', async () => {
      const a = await client.uploadImage({ bytes, filename, subfolder: 'comfy-durable-contract', type: 'input' });
      must(a.name === filename, `first upload stored as ${a.name}`);
      const b = await client.uploadImage({ bytes, filename, subfolder: 'comfy-durable-contract', type: 'input' });
      must(b.name === filename, `identical re-upload renamed to ${b.name}`);
      const c = await client.uploadImage({ bytes: testPng(32, 24, 2), filename, subfolder: 'comfy-durable-contract', type: 'input' });
      must(c.name !== filename, 'different bytes overwrote the existing file');
    });

    await check('a client-chosen prompt id is followed to completion and its output downloads', async () => {
      const promptId = derivePromptId(['contract', run, 1]);
      const graph = modelFreeGraph(`comfy-durable-contract/${filename}`, 48, 40, `comfy-durable-contract/${run}`);
      // A shared ComfyUI may be busy with a long render: a prompt queued behind it sees no movement for
      // minutes and would read as stalled, which says nothing about the protocol. Start on an idle queue.
      const waited = await waitForIdleQueue(client, IDLE_WAIT_MS);
      const res = await submitAndFollow(client, { graph, promptId, stallTimeoutMs: 60_000, pollIntervalMs: 1_000 });
      must(res.promptId === promptId, `ComfyUI used prompt id ${res.promptId}`);
      const image = res.files.find((f) => f.type === 'output' && f.filename.endsWith('.png'));
      must(image, `no PNG output in ${JSON.stringify(res.files)}`);
      const png = (await client.view(image!)).data;
      const size = readPngSize(png);
      must(size.width === 48 && size.height === 40, `output is ${size.width}x${size.height}, expected 48x40`);
      const status = await client.promptStatus(promptId);
      must(status.state === 'success', `status after completion is ${status.state}`);
      return `completed via ${res.via}${waited > 0 ? ` (after waiting ${Math.round(waited / 1000)} s for an idle queue)` : ''}`;
    });

    await check('an invalid graph is rejected with node errors naming the input', async () => {
      const graph = modelFreeGraph(`comfy-durable-contract/${filename}`, 48, 40, 'x');
      delete (graph.scale!.inputs as Record<string, unknown>).upscale_method;
      try {
        await client.submitPrompt({ graph, promptId: derivePromptId(['contract', run, 2]) });
      } catch (err) {
        must(err instanceof ComfyValidationError, `expected a validation error, got ${String(err)}`);
        const nodeErrors = (err as ComfyValidationError).nodeErrors;
        must(nodeErrors.scale, `node_errors does not name node "scale": ${JSON.stringify(nodeErrors)}`);
        return;
      }
      throw new Error('ComfyUI accepted a graph with a missing required input');
    });

    await check('an unknown prompt id reads as unknown (what a restart looks like)', async () => {
      const s = await client.promptStatus(derivePromptId(['contract', run, 'never-submitted']));
      must(s.state === 'unknown', `state is ${s.state}`);
    });

    await check('queue and targeted interrupt of a prompt that is not running are harmless', async () => {
      await client.getQueue();
      await client.interrupt(derivePromptId(['contract', run, 'not-running']));
    });
  } finally {
    await client.close();
  }
  return results;
}

const IDLE_WAIT_MS = 15 * 60_000;

/** Wait until nothing runs or waits in ComfyUI's queue (at most `maxMs`); returns how long it waited. */
async function waitForIdleQueue(client: ComfyClient, maxMs: number): Promise<number> {
  const started = Date.now();
  for (;;) {
    const q = await client.getQueue();
    if (q.running.length === 0 && q.pending.length === 0) return Date.now() - started;
    if (Date.now() - started >= maxMs) throw new Error(`ComfyUI's queue stayed busy for ${Math.round(maxMs / 60_000)} min`);
    await new Promise((resolve) => setTimeout(resolve, 1_000));
  }
}
