/**
 * Helpers for tests that drive a ComfyUI (fake or real) over the wire: small model-free-looking graphs
 * built from fixture nodes, and a WebSocket event recorder with `waitFor`.
 */
import { WebSocket } from 'ws';
import type { ComfyGraph } from '../../src/comfyui/graph.ts';

export interface SdGraphOptions {
  seed?: number;
  steps?: number;
  width?: number;
  height?: number;
  batchSize?: number;
  prefix?: string;
  sampler?: string;
  scheduler?: string;
  ckpt?: string;
}

/**
 * Checkpoint → EmptyLatentImage → KSampler → VAEDecode → SaveImage ("9"); KSampler is "3", the latent "5".
 */
export function sdGraph(o: SdGraphOptions = {}): ComfyGraph {
  return {
    '4': { class_type: 'CheckpointLoaderSimple', inputs: { ckpt_name: o.ckpt ?? 'tiny-sd15-random.safetensors' }, _meta: { title: 'Load Checkpoint' } },
    '5': {
      class_type: 'EmptyLatentImage',
      inputs: { width: o.width ?? 64, height: o.height ?? 64, batch_size: o.batchSize ?? 1 },
      _meta: { title: 'Empty Latent Image' },
    },
    '6': { class_type: 'CLIPTextEncode', inputs: { text: 'a red fox', clip: ['4', 1] }, _meta: { title: 'Positive' } },
    '7': { class_type: 'CLIPTextEncode', inputs: { text: '', clip: ['4', 1] }, _meta: { title: 'Negative' } },
    '3': {
      class_type: 'KSampler',
      inputs: {
        seed: o.seed ?? 42,
        steps: o.steps ?? 4,
        cfg: 7,
        sampler_name: o.sampler ?? 'euler',
        scheduler: o.scheduler ?? 'normal',
        denoise: 1,
        model: ['4', 0],
        positive: ['6', 0],
        negative: ['7', 0],
        latent_image: ['5', 0],
      },
      _meta: { title: 'KSampler' },
    },
    '8': { class_type: 'VAEDecode', inputs: { samples: ['3', 0], vae: ['4', 2] }, _meta: { title: 'VAE Decode' } },
    '9': { class_type: 'SaveImage', inputs: { filename_prefix: o.prefix ?? 'test', images: ['8', 0] }, _meta: { title: 'Save Image' } },
  };
}

/**
 * Flux-dev through the GGUF loaders (V1 combos given as 1-tuples) and V3 nodes (EmptySD3LatentImage,
 * FluxGuidance); SaveImage is "10".
 */
export function fluxGgufGraph(o: SdGraphOptions & { guidance?: number } = {}): ComfyGraph {
  return {
    '1': { class_type: 'UnetLoaderGGUF', inputs: { unet_name: 'flux1-dev-Q8_0.gguf' }, _meta: { title: 'Unet Loader (GGUF)' } },
    '2': {
      class_type: 'DualCLIPLoaderGGUF',
      inputs: { clip_name1: 't5xxl_fp8_e4m3fn.safetensors', clip_name2: 'clip_l.safetensors', type: 'flux' },
      _meta: { title: 'DualCLIPLoader (GGUF)' },
    },
    '3': { class_type: 'VAELoader', inputs: { vae_name: 'ae.safetensors' }, _meta: { title: 'Load VAE' } },
    '4': { class_type: 'CLIPTextEncode', inputs: { text: 'a lighthouse', clip: ['2', 0] }, _meta: { title: 'Prompt' } },
    '5': { class_type: 'FluxGuidance', inputs: { conditioning: ['4', 0], guidance: o.guidance ?? 3.5 }, _meta: { title: 'FluxGuidance' } },
    '6': { class_type: 'ConditioningZeroOut', inputs: { conditioning: ['4', 0] }, _meta: { title: 'Negative' } },
    '7': {
      class_type: 'EmptySD3LatentImage',
      inputs: { width: o.width ?? 64, height: o.height ?? 64, batch_size: o.batchSize ?? 1 },
      _meta: { title: 'EmptySD3LatentImage' },
    },
    '8': {
      class_type: 'KSampler',
      inputs: {
        seed: o.seed ?? 7,
        steps: o.steps ?? 4,
        cfg: 1,
        sampler_name: o.sampler ?? 'euler',
        scheduler: o.scheduler ?? 'simple',
        denoise: 1,
        model: ['1', 0],
        positive: ['5', 0],
        negative: ['6', 0],
        latent_image: ['7', 0],
      },
      _meta: { title: 'KSampler' },
    },
    '9': { class_type: 'VAEDecode', inputs: { samples: ['8', 0], vae: ['3', 0] }, _meta: { title: 'VAE Decode' } },
    '10': { class_type: 'SaveImage', inputs: { filename_prefix: o.prefix ?? 'flux', images: ['9', 0] }, _meta: { title: 'Save Image' } },
  };
}

export interface WsEvent {
  type: string;
  data: Record<string, unknown>;
}

/** Records every JSON frame of one WebSocket connection. */
export class WsRecorder {
  readonly events: WsEvent[] = [];
  sid = '';
  closed = false;
  private waiters: Array<() => void> = [];

  private constructor(readonly ws: WebSocket) {
    ws.on('message', (raw, isBinary) => {
      if (isBinary) return;
      // A text frame, and ws's default binaryType: a Buffer.
      const ev = JSON.parse((raw as Buffer).toString()) as WsEvent;
      this.events.push(ev);
      this.notify();
    });
    ws.on('close', () => {
      this.closed = true;
      this.notify();
    });
  }

  /** Connects to `{httpUrl}/ws` (optionally with a clientId) and waits for the first `status` frame. */
  static async connect(httpUrl: string, clientId?: string, path = '/ws'): Promise<WsRecorder> {
    const url = `${httpUrl.replace(/^http/, 'ws')}${path}${clientId ? `?clientId=${encodeURIComponent(clientId)}` : ''}`;
    const ws = new WebSocket(url);
    const rec = new WsRecorder(ws);
    await new Promise<void>((resolve, reject) => {
      ws.once('open', () => resolve());
      ws.once('error', reject);
    });
    const first = await rec.waitFor((e) => e.type === 'status');
    rec.sid = typeof first.data.sid === 'string' ? first.data.sid : '';
    return rec;
  }

  private notify(): void {
    const w = this.waiters;
    this.waiters = [];
    for (const f of w) f();
  }

  /** The first recorded event (from index `from`) matching, waiting up to `timeoutMs`. */
  async waitFor(pred: (e: WsEvent) => boolean, timeoutMs = 5000, from = 0): Promise<WsEvent> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const hit = this.events.slice(from).find(pred);
      if (hit) return hit;
      if (this.closed) throw new Error('websocket closed while waiting');
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`timed out waiting for event; got ${this.events.map((e) => e.type).join(',')}`);
      await new Promise<void>((resolve) => {
        const t = setTimeout(resolve, left);
        this.waiters.push(() => {
          clearTimeout(t);
          resolve();
        });
      });
    }
  }

  /** Waits for the `executing {node: null, prompt_id}` that ends a prompt. */
  waitForDone(promptId: string, timeoutMs = 5000): Promise<WsEvent> {
    return this.waitFor((e) => e.type === 'executing' && e.data.node === null && e.data.prompt_id === promptId, timeoutMs);
  }

  /** Events carrying this prompt id, in order. */
  forPrompt(promptId: string): WsEvent[] {
    return this.events.filter((e) => e.data.prompt_id === promptId);
  }

  send(obj: unknown): void {
    this.ws.send(JSON.stringify(obj));
  }

  async close(): Promise<void> {
    if (this.closed) return;
    await new Promise<void>((resolve) => {
      this.ws.once('close', () => resolve());
      this.ws.close();
    });
  }
}

export interface HttpResult<T = unknown> {
  status: number;
  headers: Headers;
  text: string;
  /** Parsed JSON, or undefined when the body is not JSON. */
  json: T;
}

async function toResult<T>(res: Response): Promise<HttpResult<T>> {
  const text = await res.text();
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  return { status: res.status, headers: res.headers, text, json: json as T };
}

/** Minimal HTTP helpers against one base URL. */
export function httpClient(baseUrl: string) {
  return {
    async get<T = unknown>(path: string): Promise<HttpResult<T>> {
      return toResult<T>(await fetch(baseUrl + path));
    },
    async post<T = unknown>(path: string, body?: unknown): Promise<HttpResult<T>> {
      const init: RequestInit = { method: 'POST' };
      if (body !== undefined) {
        init.body = typeof body === 'string' ? body : JSON.stringify(body);
        init.headers = { 'content-type': 'application/json' };
      }
      return toResult<T>(await fetch(baseUrl + path, init));
    },
    /** `POST /prompt`; throws unless 200. */
    async submit(prompt: unknown, extra: Record<string, unknown> = {}): Promise<{ prompt_id: string; number: number; node_errors: Record<string, unknown> }> {
      const r = await toResult<{ prompt_id: string; number: number; node_errors: Record<string, unknown> }>(
        await fetch(`${baseUrl}/prompt`, { method: 'POST', body: JSON.stringify({ prompt, ...extra }), headers: { 'content-type': 'application/json' } }),
      );
      if (r.status !== 200) throw new Error(`POST /prompt ${r.status}: ${r.text}`);
      return r.json;
    },
    /** Polls `/history/{id}` until the prompt is there. */
    async waitForHistory<T = Record<string, unknown>>(promptId: string, timeoutMs = 5000): Promise<T> {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const r = await toResult<Record<string, T>>(await fetch(`${baseUrl}/history/${promptId}`));
        const h = r.json[promptId];
        if (h) return h;
        if (Date.now() > deadline) throw new Error(`no history for ${promptId}`);
        await new Promise((res) => setTimeout(res, 10));
      }
    },
  };
}
