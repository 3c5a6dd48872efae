/**
 * The HTTP front in-process (Fastify inject) with a stand-in for Temporal: for checks of what the front
 * answers before or instead of starting a render (guards, limits, envelopes). `starts` records every
 * workflow start the front asked for; `wait` answers what the test tells it to.
 */
import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Client } from '@temporalio/client';
import type { FastifyInstance } from 'fastify';
import { InFlight } from '../../src/api/in-flight.ts';
import { OptionsStore } from '../../src/api/options-store.ts';
import { IdempotencyConflictError, RenderFailedError, type RenderService, type StartOptions, type StartedRender } from '../../src/renders/render-service.ts';
import { buildServer } from '../../src/api/server.ts';
import { ComfyCatalog } from '../../src/api/comfy-catalog.ts';
import type { ObjectInfo } from '../../src/comfyui/object-info.ts';
import { FsBlobStore } from '../../src/blobs/fs-store.ts';
import { loadConfig, type Config } from '../../src/config/config.ts';
import { createLogger } from '../../src/log.ts';
import type { RenderRequest, RenderResult } from '../../src/contracts/render.ts';

export interface TestFront {
  app: FastifyInstance;
  config: Config;
  dataDir: string;
  blobDir: string;
  starts: { request: RenderRequest; opts: StartOptions }[];
  /** How a started render ends; default: a 503 failure (tests that need more set it). */
  outcome: (started: StartedRender) => Promise<RenderResult>;
  /** Make the next start fail like Temporal would (e.g. an Idempotency-Key conflict). */
  startError?: Error;
  cancelled: string[];
  inFlight(): InFlight;
  close(): Promise<void>;
}

export interface TestFrontOptions {
  /** Renders waiting or running, for admission control (default 0). */
  waitingRenders?: () => Promise<number>;
  /** One client's renders waiting or running (default: its renders this front started whose wait has not ended). */
  waitingRendersOf?: (client: string) => Promise<number>;
  /**
   * What an Idempotency-Key's render id finds. Default: what Temporal would say of the starts this front
   * made (the key's render with the same fingerprint attaches, with another one conflicts).
   */
  keyState?: (renderId: string) => 'attach' | 'new' | 'conflict';
  /** ComfyUI's LoRA file list, for requests with LoRA tags (default: no catalog, as when ComfyUI is down). */
  loras?: string[];
  /** ComfyUI's whole `/object_info` (a real ComfyCatalog over it: model lists, LoRAs), or its failure. */
  objectInfo?: () => Promise<ObjectInfo>;
  /** The GPU lease a render start takes once the request passed every check (renders/submit.ts). */
  gpuLease?: { poke(waitMs: number): Promise<void> };
  /** Serve the Temporal UI proxy at /temporal (to an address nothing answers on, unless a test starts one). */
  temporalUi?: { upstream: string };
  /** The Temporal client the operator routes read (a stand-in a test builds; default: none). */
  client?: Client;
}

export async function startTestFront(env: Record<string, string> = {}, opts: TestFrontOptions = {}): Promise<TestFront> {
  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'cd-front-'));
  const config = loadConfig({ DATA_DIR: dataDir, COMFYUI_URL: 'http://127.0.0.1:9', LOG_LEVEL: 'silent', ...env });
  const logger = createLogger('silent');
  const front: Partial<TestFront> = {
    starts: [],
    cancelled: [],
    outcome: async (s) => {
      throw new RenderFailedError(s.renderId, 503, 'ComfyUnavailable', 'no GPU in this test');
    },
  };
  /** Renders waiting per client (a render waits while its sync client waits for its outcome). */
  const waiting = new Map<string, number>();
  /** Fingerprint of each keyed render started: the memo Temporal would keep. */
  const fingerprints = new Map<string, string>();
  const wait = async (started: StartedRender) => {
    const client = front.starts!.find((s) => s.opts.renderId === started.renderId)?.opts.client;
    if (client !== undefined) waiting.set(client, (waiting.get(client) ?? 0) + 1);
    try {
      return await front.outcome!(started);
    } finally {
      if (client !== undefined) waiting.set(client, waiting.get(client)! - 1);
    }
  };
  const renders = {
    client: opts.client ?? ({} as Client),
    start: async (request: RenderRequest, opts: StartOptions): Promise<StartedRender> => {
      if (front.startError) {
        const e = front.startError;
        front.startError = undefined;
        throw e;
      }
      front.starts!.push({ request, opts });
      const renderId = opts.renderId;
      if (opts.fingerprint !== undefined && !fingerprints.has(renderId)) fingerprints.set(renderId, opts.fingerprint);
      const handle = {
        workflowId: renderId,
        cancel: async () => {
          front.cancelled!.push(renderId);
        },
      } as unknown as StartedRender['handle'];
      return { renderId, handle, attached: false, model: request.model, startedAt: Date.now() };
    },
    wait,
    // No workers in this stand-in tell a render's end ahead: the answer is prepared from the outcome.
    answer: async <T>(started: StartedRender, prepare: (r: RenderResult) => Promise<T>) => prepare(await wait(started)),
    checkKey: async (renderId: string, fingerprint: string) => {
      const known = fingerprints.get(renderId);
      const state = opts.keyState?.(renderId) ?? (known === undefined ? 'new' : known === fingerprint ? 'attach' : 'conflict');
      if (state === 'conflict') throw new IdempotencyConflictError(renderId);
      return state;
    },
    handle: () => {
      throw new Error('not in this test');
    },
  } as unknown as RenderService;
  const inFlight = new InFlight();
  const app = await buildServer({
    config,
    logger,
    blobs: new FsBlobStore(config.blobDir),
    renders,
    options: new OptionsStore(path.join(dataDir, 'options.json'), { sd_model_checkpoint: 'FLUX.1-schnell' }),
    health: {
      temporal: { workflowService: { getSystemInfo: async () => ({}), describeTaskQueue: async () => ({ pollers: [{}] }) } } as unknown as Client,
      namespace: 'default',
      taskQueue: 'renders',
      backends: [{ id: 'comfyui-0', url: 'http://secret-gpu-box.internal:8188' }],
      probeComfy: async () => ({}),
    },
    waitingRenders: opts.waitingRenders ?? (async () => 0),
    waitingRendersOf: opts.waitingRendersOf ?? (async (client) => waiting.get(client) ?? 0),
    ...(opts.objectInfo ? { catalog: catalogOver(opts.objectInfo) } : {}),
    ...(opts.loras ? { catalog: { loras: async () => opts.loras!, upscaleModels: async () => [] } as unknown as ComfyCatalog } : {}),
    inFlight,
    ...(opts.gpuLease ? { gpuLease: opts.gpuLease } : {}),
    ...(opts.temporalUi ? { temporalUi: opts.temporalUi } : {}),
  });
  await app.ready();
  Object.assign(front, { app, config, dataDir, blobDir: config.blobDir, inFlight: () => inFlight, close: () => app.close() });
  return front as TestFront;
}

/** The front's catalog over a ComfyUI that answers `/object_info` with `info()`. */
function catalogOver(info: () => Promise<ObjectInfo>): ComfyCatalog {
  return new ComfyCatalog({
    objectInfo: async (cls) => (await info())[cls],
    allObjectInfo: info,
    systemStats: async () => {
      throw new Error('no system stats in this test');
    },
  });
}
