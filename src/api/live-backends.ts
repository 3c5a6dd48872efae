/**
 * What ComfyUI's clients read about the server (`/object_info`, `/models`, `/embeddings`, `/system_stats`,
 * `/features`) is answered by a live backend: the first one not marked unhealthy. Every backend must have the
 * same nodes and files (the renders may run on any of them). The full `/object_info` the prompt check reads
 * is cached briefly: clients call it per render, and it is a few MB on a real server.
 */
import type { ApiContext } from './context.ts';
import type { Backend } from '../contracts/render.ts';
import { parseObjectInfo, type ObjectInfo } from '../comfyui/object-info.ts';
import { HttpTransport, noopLogger } from '../comfyui/transport.ts';

const TIMEOUT_MS = 10_000;
const OBJECT_INFO_CACHE_MS = 10_000;
/** A passed-through answer larger than this is not read (a real /object_info is ~3 MB). */
const MAX_ANSWER_BYTES = 64 * 1024 * 1024;

export interface BackendAnswer {
  status: number;
  contentType: string;
  body: Buffer;
}

/**
 * One keep-alive transport per backend, for every LiveBackends: node's HTTP client, as the service's own
 * ComfyUI client uses. The global `fetch` costs a front that would otherwise never load it +2.6 MB of heap
 * and ~20 MB of RSS (its undici, bench/README.md issue 25), and the workflow-file check asks at every start.
 */
const transports = new Map<string, HttpTransport>();

function transportFor(b: Backend): HttpTransport {
  let t = transports.get(b.url);
  if (!t) {
    t = new HttpTransport({ url: new URL(b.url), logger: noopLogger, requestMs: TIMEOUT_MS, connections: 4 });
    transports.set(b.url, t);
  }
  return t;
}

export class BackendUnavailableError extends Error {
  override name = 'BackendUnavailableError';
}

export class LiveBackends {
  private objectInfo?: { at: number; value: Promise<{ raw: unknown; parsed: ObjectInfo }> };

  constructor(private readonly ctx: Pick<ApiContext, 'health'>) {}

  /** The backend that answers for all: the first not marked unhealthy (or the first, when all are). */
  backend(): Backend {
    const all = this.ctx.health.backends;
    const unhealthy = this.ctx.health.unhealthy?.() ?? new Map<string, string>();
    const b = all.find((x) => !unhealthy.has(x.id)) ?? all[0];
    if (!b) throw new BackendUnavailableError('no ComfyUI backend is configured');
    return b;
  }

  /** GET `path` (with its query string) from the live backend, as it answers. */
  async get(pathAndQuery: string): Promise<BackendAnswer> {
    const b = this.backend();
    try {
      const res = await transportFor(b).call('GET', pathAndQuery, { timeoutMs: TIMEOUT_MS, maxBytes: MAX_ANSWER_BYTES });
      const type = res.headers['content-type'];
      return { status: res.status, contentType: (Array.isArray(type) ? type[0] : type) ?? 'application/json', body: res.body };
    } catch (err) {
      throw new BackendUnavailableError(`ComfyUI ${b.id} did not answer: ${(err as Error).message}`);
    }
  }

  /** The full `/object_info`, as sent and as read (cached for a few seconds). */
  nodes(): Promise<{ raw: unknown; parsed: ObjectInfo }> {
    const hit = this.objectInfo;
    if (hit && Date.now() - hit.at < OBJECT_INFO_CACHE_MS) return hit.value;
    const value = this.get('/object_info').then((a) => {
      if (a.status !== 200) throw new BackendUnavailableError(`ComfyUI answered /object_info with ${a.status}`);
      const raw: unknown = JSON.parse(a.body.toString('utf8'));
      return { raw, parsed: parseObjectInfo(raw) };
    });
    this.objectInfo = { at: Date.now(), value };
    value.catch(() => {
      if (this.objectInfo?.value === value) this.objectInfo = undefined;
    });
    return value;
  }
}
