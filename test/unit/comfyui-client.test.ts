import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ComfyClient } from '../../src/comfyui/client.ts';
import {
  ComfyProtocolError,
  ComfyRequestError,
  ComfyUnavailableError,
  ComfyUnsupportedError,
  ComfyValidationError,
  formatNodeErrors,
  isOutOfMemory,
} from '../../src/comfyui/errors.ts';
import { derivePromptId } from '../../src/comfyui/prompt-id.ts';
import type { ComfyGraph } from '../../src/comfyui/graph.ts';
import { ComfyStub } from './comfyui-stub.ts';

const graph: ComfyGraph = {
  '9': { class_type: 'SaveImage', inputs: { filename_prefix: 'job', images: ['8', 0] }, _meta: { title: 'Save' } },
};

let stub: ComfyStub;
let client: ComfyClient;

beforeEach(async () => {
  stub = await new ComfyStub().listen();
  client = new ComfyClient({ baseUrl: stub.url, timeouts: { requestMs: 2000 } });
});
afterEach(async () => {
  await client.close();
  await stub.stop();
});

describe('submitPrompt', () => {
  it('sends prompt_id, client_id, extra_data and returns the queued id', async () => {
    const promptId = derivePromptId(['render-1', 'run', 0, 1]);
    const r = await client.submitPrompt({ graph, promptId, clientId: 'abc', extraData: { preview_method: 'none' } });
    expect(r).toEqual({ promptId, number: 0, nodeErrors: {} });
    const sent = JSON.parse(stub.requests.find((q) => q.path === '/prompt')!.body.toString('utf8'));
    expect(sent).toMatchObject({ prompt: graph, prompt_id: promptId, client_id: 'abc', extra_data: { preview_method: 'none' } });
    expect(stub.pending.map((p) => p.id)).toEqual([promptId]);
  });

  it('treats HTTP 200 with node_errors as a non-retryable validation error and cancels the partial prompt', async () => {
    stub.overrides.set('POST /prompt', () => ({
      status: 200,
      json: {
        prompt_id: 'p-1',
        number: 3,
        node_errors: {
          '12': {
            errors: [
              {
                type: 'value_not_in_list',
                message: 'Value not in list',
                details: "ckpt_name: 'x.safetensors' not in [...]",
                extra_info: { input_name: 'ckpt_name' },
              },
            ],
            dependent_outputs: ['9'],
            class_type: 'CheckpointLoaderSimple',
          },
        },
      },
    }));
    const err = await client.submitPrompt({ graph }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ComfyValidationError);
    const v = err as ComfyValidationError;
    expect(v.retryable).toBe(false);
    expect(v.type).toBe('ComfyValidation');
    expect(v.status).toBe(200);
    expect(v.queuedPromptId).toBe('p-1');
    expect(v.message).toContain('node 12 (CheckpointLoaderSimple) input "ckpt_name": Value not in list');
    expect(stub.count('POST', '/api/jobs/p-1/cancel')).toBe(1);
  });

  it('400 invalid_prompt_id keeps ComfyUI error body', async () => {
    const err = (await client.submitPrompt({ graph, promptId: 'NOT-A-UUID' }).catch((e: unknown) => e)) as ComfyValidationError;
    expect(err).toBeInstanceOf(ComfyValidationError);
    expect(err.status).toBe(400);
    expect(err.errorType).toBe('invalid_prompt_id');
    expect(err.error.details).toContain('canonical lowercase');
    expect(err.retryable).toBe(false);
  });

  it('400 with node_errors formats node, class, input and message', async () => {
    stub.overrides.set('POST /prompt', () => ({
      status: 400,
      json: {
        error: { type: 'prompt_outputs_failed_validation', message: 'Prompt outputs failed validation', details: '', extra_info: {} },
        node_errors: {
          '3': {
            errors: [
              {
                type: 'value_bigger_than_max',
                message: 'Value bigger than max',
                details: 'steps: 10000 > 1000',
                extra_info: { input_name: 'steps', received_value: 10000 },
              },
            ],
            dependent_outputs: ['9'],
            class_type: 'KSampler',
          },
        },
      },
    }));
    const err = (await client.submitPrompt({ graph }).catch((e: unknown) => e)) as ComfyValidationError;
    expect(err.errorType).toBe('prompt_outputs_failed_validation');
    expect(err.message).toContain('node 3 (KSampler) input "steps": Value bigger than max: steps: 10000 > 1000');
    expect(err.nodeErrors['3']?.class_type).toBe('KSampler');
  });

  it('500 is retryable ComfyUnavailableError with status', async () => {
    stub.overrides.set('POST /prompt', () => ({ status: 500, text: 'Internal Server Error' }));
    const err = (await client.submitPrompt({ graph }).catch((e: unknown) => e)) as ComfyUnavailableError;
    expect(err).toBeInstanceOf(ComfyUnavailableError);
    expect(err.status).toBe(500);
    expect(err.retryable).toBe(true);
  });

  it('connection refused is retryable ComfyUnavailableError without status', async () => {
    const dead = new ComfyClient({ baseUrl: 'http://127.0.0.1:1', timeouts: { requestMs: 1000 } });
    const err = (await dead.submitPrompt({ graph }).catch((e: unknown) => e)) as ComfyUnavailableError;
    await dead.close();
    expect(err).toBeInstanceOf(ComfyUnavailableError);
    expect(err.status).toBeUndefined();
    expect(err.retryable).toBe(true);
  });

  it('a 200 that is not the documented shape is a protocol error', async () => {
    stub.overrides.set('POST /prompt', () => ({ status: 200, text: '<html>proxy</html>' }));
    await expect(client.submitPrompt({ graph })).rejects.toBeInstanceOf(ComfyProtocolError);
  });
});

describe('jobs, history and queue', () => {
  it('getJob returns undefined on 404 when the jobs API exists', async () => {
    expect(await client.getJob(derivePromptId(['nope']))).toBeUndefined();
    expect(client.jobsApiSupported).toBe(true);
  });

  it('degrades to /history + /queue when /api/jobs itself is missing, and remembers it', async () => {
    stub.jobsApi = false;
    const id = derivePromptId(['legacy']);
    await expect(client.getJob(id)).rejects.toBeInstanceOf(ComfyUnsupportedError);
    expect(client.jobsApiSupported).toBe(false);
    stub.enqueue(id);
    expect(await client.promptStatus(id)).toEqual({ state: 'pending' });
    stub.start(id);
    expect(await client.promptStatus(id)).toEqual({ state: 'running' });
    stub.succeed(id);
    const st = await client.promptStatus(id);
    expect(st.state).toBe('success');
    expect(await client.promptStatus(derivePromptId(['gone']))).toEqual({ state: 'unknown' });
    // Exactly one probe of /api/jobs/{id} and one of /api/jobs: never asked again.
    expect(stub.count('GET', '/api/jobs')).toBe(2);
  });

  it('getHistory returns undefined for {} and the item otherwise', async () => {
    const id = derivePromptId(['h']);
    expect(await client.getHistory(id)).toBeUndefined();
    stub.enqueue(id);
    stub.start(id);
    stub.succeed(id);
    const item = await client.getHistory(id);
    expect(item?.status?.status_str).toBe('success');
  });

  it('getQueue lists running and pending ids (pending sorted by number)', async () => {
    const [a, b, c] = [derivePromptId(['a']), derivePromptId(['b']), derivePromptId(['c'])];
    stub.enqueue(a);
    stub.enqueue(b);
    stub.enqueue(c);
    stub.start(a);
    stub.pending.reverse(); // ComfyUI returns an unsorted heap copy
    const q = await client.getQueue();
    expect(q.runningIds).toEqual([a]);
    expect(q.pendingIds).toEqual([b, c]);
    expect(q.running[0]?.raw[1]).toBe(a);
  });

  describe.each([
    ['jobs API', true],
    ['legacy', false],
  ])('promptStatus via %s', (_name, jobsApi) => {
    beforeEach(() => {
      stub.jobsApi = jobsApi;
    });

    it('success with files', async () => {
      const id = derivePromptId(['s', String(jobsApi)]);
      stub.enqueue(id);
      stub.start(id);
      stub.succeed(id, [{ filename: 'a_00001_.png', subfolder: 'job' }]);
      const st = await client.promptStatus(id);
      expect(st).toMatchObject({ state: 'success', files: [{ nodeId: '9', key: 'images', filename: 'a_00001_.png', subfolder: 'job', type: 'output' }] });
    });

    it('error from messages even when status_str says success', async () => {
      const id = derivePromptId(['cycle', String(jobsApi)]);
      stub.enqueue(id);
      stub.start(id);
      stub.succeed(id);
      // The dependency-cycle edge path: execution_error recorded but success not cleared (docs/comfyui-protocol.md).
      const h = stub.history[id]!;
      (h.status as { messages: unknown[] }).messages.push([
        'execution_error',
        { prompt_id: id, node_id: '5', node_type: 'ReferenceLatent', exception_type: 'graph.DependencyCycleError', exception_message: 'cycle', traceback: [] },
      ]);
      const st = await client.promptStatus(id);
      expect(st.state).toBe('error');
      if (st.state === 'error') {
        expect(st.error.nodeId).toBe('5');
        expect(st.error.exceptionType).toBe('graph.DependencyCycleError');
      }
    });

    it('interrupted', async () => {
      const id = derivePromptId(['int', String(jobsApi)]);
      stub.enqueue(id);
      stub.start(id);
      stub.interruptPrompt(id);
      expect(await client.promptStatus(id)).toMatchObject({ state: 'interrupted', nodeId: '3' });
    });

    it('error with OOM detection', async () => {
      const id = derivePromptId(['oom', String(jobsApi)]);
      stub.enqueue(id);
      stub.start(id);
      stub.fail(id, {
        node_id: '3',
        node_type: 'KSampler',
        exception_type: 'torch.OutOfMemoryError',
        exception_message: 'Allocation on device \nThis error means you ran out of memory on your GPU.',
      });
      const st = await client.promptStatus(id);
      expect(st).toMatchObject({ state: 'error', error: { nodeId: '3', nodeType: 'KSampler', isOutOfMemory: true } });
    });

    it('unknown after a restart', async () => {
      const id = derivePromptId(['lost', String(jobsApi)]);
      stub.enqueue(id);
      stub.restart();
      expect(await client.promptStatus(id)).toEqual({ state: 'unknown' });
    });
  });

  it("takes the jobs API's 404 for an unknown prompt as final: one request once the route is known", async () => {
    stub.jobsApi = true;
    const seen = derivePromptId(['seen']);
    stub.enqueue(seen);
    expect(await client.promptStatus(seen)).toEqual({ state: 'pending' });
    const before = stub.requests.length;
    expect(await client.promptStatus(derivePromptId(['never-submitted']))).toEqual({ state: 'unknown' });
    expect(stub.requests.slice(before).map((q) => q.path)).toEqual([`/api/jobs/${derivePromptId(['never-submitted'])}`]);
  });
});

describe('control routes', () => {
  it('interrupt sends a targeted body, or {} for global', async () => {
    await client.interrupt('p-1');
    await client.interrupt();
    const bodies = stub.requests.filter((r) => r.path === '/interrupt').map((r) => JSON.parse(r.body.toString('utf8')));
    expect(bodies).toEqual([{ prompt_id: 'p-1' }, {}]);
  });

  it('cancelJob uses /api/jobs/{id}/cancel when present', async () => {
    const id = derivePromptId(['c1']);
    stub.enqueue(id);
    expect(await client.cancelJob(id)).toEqual({ method: 'jobs-api', cancelled: true });
    expect(stub.pending).toEqual([]);
  });

  it('cancelJob falls back to queue delete + targeted interrupt before v0.26', async () => {
    stub.cancelApi = false;
    const id = derivePromptId(['c2']);
    stub.enqueue(id);
    expect(await client.cancelJob(id)).toEqual({ method: 'queue-delete+interrupt' });
    expect(stub.pending).toEqual([]);
    const seq = stub.requests.filter((r) => r.method === 'POST').map((r) => r.path);
    expect(seq).toEqual([`/api/jobs/${id}/cancel`, '/queue', '/interrupt']);
    await client.cancelJob(id);
    expect(stub.count('POST', '/api/jobs')).toBe(1); // remembered
  });

  it('free sends snake_case flags', async () => {
    await client.free({ unloadModels: true, freeMemory: true });
    const r = stub.requests.find((q) => q.path === '/free')!;
    expect(JSON.parse(r.body.toString('utf8'))).toEqual({ unload_models: true, free_memory: true });
  });
});

describe('files and info', () => {
  it('uploadImage sends multipart fields and returns the stored name', async () => {
    let seen: Record<string, unknown> = {};
    stub.overrides.set('POST /upload/image', async (r) => {
      const form = await new Request('http://x/', { method: 'POST', headers: { 'content-type': String(r.headers['content-type']) }, body: r.body }).formData();
      const file = form.get('image') as File;
      seen = {
        filename: file.name,
        bytes: Buffer.from(await file.arrayBuffer()).toString('hex'),
        overwrite: form.get('overwrite'),
        subfolder: form.get('subfolder'),
        type: form.get('type'),
      };
      return { status: 200, json: { name: file.name, subfolder: form.get('subfolder'), type: form.get('type') } };
    });
    const res = await client.uploadImage({ bytes: Buffer.from([1, 2, 3]), filename: 'abc.png', subfolder: 'cd', overwrite: true });
    expect(res).toEqual({ name: 'abc.png', subfolder: 'cd', type: 'input' });
    expect(seen).toEqual({ filename: 'abc.png', bytes: '010203', overwrite: 'true', subfolder: 'cd', type: 'input' });
  });

  it('view returns bytes and content type; 404 is a non-retryable request error', async () => {
    stub.overrides.set('GET /view', (r) =>
      r.query.get('filename') === 'a.png' && r.query.get('type') === 'output' && r.query.get('subfolder') === 's'
        ? { status: 200, bytes: Buffer.from('PNGDATA'), contentType: 'image/png' }
        : { status: 404, text: 'not found' },
    );
    const v = await client.view({ filename: 'a.png', subfolder: 's', type: 'output' });
    expect(v.data.toString()).toBe('PNGDATA');
    expect(v.contentType).toBe('image/png');
    const err = (await client.view({ filename: 'b.png', subfolder: '', type: 'output' }).catch((e: unknown) => e)) as ComfyRequestError;
    expect(err).toBeInstanceOf(ComfyRequestError);
    expect(err.status).toBe(404);
    expect(err.retryable).toBe(false);
  });

  it('objectInfo keeps every node: null cosmetic fields pass, unreadable used parts are dropped and logged once', async () => {
    // Shapes recorded from a real ComfyUI 0.33.0: display_name null, output_is_list [null], unknown keys.
    const guidance = {
      input: { required: { conditioning: ['CONDITIONING'], guidance: ['FLOAT', { default: 3.5, min: 0, max: 100 }] } },
      input_order: { required: ['conditioning', 'guidance'] },
      output: ['CONDITIONING'],
      output_is_list: [null],
      output_name: ['CONDITIONING'],
      name: 'FluxGuidance',
      display_name: null,
      description: '',
      category: 'advanced/conditioning/flux',
      output_node: false,
      search_aliases: null,
      price_badge: null,
      has_intermediate_output: false,
    };
    const broken = { input: { required: { ok: ['INT'], bad: 'INT' } }, output: 'LATENT', name: 'Broken' };
    const warnings: Array<Record<string, unknown>> = [];
    const log = { debug() {}, info() {}, error() {}, warn: (o: Record<string, unknown>) => void warnings.push(o) };
    const logged = new ComfyClient({ baseUrl: stub.url, logger: log });
    stub.overrides.set('GET /object_info', () => ({ status: 200, json: { FluxGuidance: guidance, Broken: broken, Junk: 7 } }));
    stub.overrides.set('GET /object_info/FluxGuidance', () => ({ status: 200, json: { FluxGuidance: guidance } }));
    stub.overrides.set('GET /object_info/Nope', () => ({ status: 200, json: {} }));
    try {
      const info = await logged.objectInfo();
      expect(Object.keys(info)).toEqual(['FluxGuidance', 'Broken', 'Junk']);
      expect(info.FluxGuidance).toMatchObject({ display_name: null, output_is_list: [null], output: ['CONDITIONING'], search_aliases: null });
      expect(info.Broken).toMatchObject({ input: { required: { ok: ['INT'] } }, output: [], output_node: false });
      expect(info.Broken!.input.required).not.toHaveProperty('bad');
      expect(info.Junk).toMatchObject({ name: 'Junk', input: {}, output: [] });
      const problems = warnings.map((w) => `${String(w.node)}: ${String(w.problem)}`);
      expect(problems).toEqual(['Broken: input.required.bad: not a non-empty list', 'Broken: output: not a list', 'Junk: entry is not an object']);
      await logged.objectInfo();
      expect(warnings).toHaveLength(3);
      expect((await logged.objectInfo('FluxGuidance'))?.output).toEqual(['CONDITIONING']);
      expect(await logged.objectInfo('Nope')).toBeUndefined();
    } finally {
      await logged.close();
    }
  });

  it('systemStats tolerates old releases (missing optional fields)', async () => {
    stub.overrides.set('GET /system_stats', () => ({
      status: 200,
      json: {
        system: { os: 'nt', python_version: '3.12', comfyui_version: '0.3.64', extra: 1 },
        devices: [{ name: 'cuda:0', type: 'cuda', index: 0, vram_total: 1, vram_free: 1 }],
      },
    }));
    const s = await client.systemStats();
    expect(s.system.comfyui_version).toBe('0.3.64');
    expect(s.devices).toHaveLength(1);
  });

  it('baseUrl path prefix is kept (reverse proxy)', async () => {
    const prefixed = new ComfyClient({ baseUrl: `${stub.url}/comfy/` });
    stub.overrides.set('GET /comfy/features', () => ({ status: 200, json: { supports_preview_metadata: true } }));
    expect(await prefixed.features()).toEqual({ supports_preview_metadata: true });
    await prefixed.close();
  });
});

describe('error helpers', () => {
  it('isOutOfMemory recognises torch types and ComfyUI tips, not ordinary errors', () => {
    expect(isOutOfMemory('torch.OutOfMemoryError', 'x')).toBe(true);
    expect(isOutOfMemory('torch.cuda.OutOfMemoryError', 'CUDA out of memory')).toBe(true);
    expect(isOutOfMemory('torch.AcceleratorError', 'CUDA error: out of memory')).toBe(true);
    expect(isOutOfMemory('Exception', 'boom\nThis error means you ran out of memory on your GPU.\n\nTIPS: ...')).toBe(true);
    expect(isOutOfMemory('RuntimeError', 'mat1 and mat2 shapes cannot be multiplied')).toBe(false);
    expect(isOutOfMemory('FileNotFoundError', 'model out of memory.safetensors missing')).toBe(false);
  });

  it('formatNodeErrors handles errors without input names', () => {
    expect(
      formatNodeErrors({
        '7': {
          errors: [{ type: 'custom_validation_failed', message: 'Invalid image file: a.png', details: '', extra_info: {} }],
          dependent_outputs: [],
          class_type: 'LoadImage',
        },
      }),
    ).toEqual(['node 7 (LoadImage): Invalid image file: a.png']);
  });
});
