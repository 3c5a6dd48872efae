/**
 * The one way a render starts, whatever the entry point (A1111 routes, the video API, the OpenAI image
 * routes, operator replays from HTTP or the CLI). An entry point parses and normalises its own input into a
 * `RenderRequest`, then calls `submit`; every rule of starting a render lives here, in this order:
 *
 *   0. webhook: a URL the request names is checked against the allow-list (a 400 naming the protocol's field);
 *      the target (or the configured default for async work) goes into the render's input;
 *   1. idempotency: with a key, the render id is derived from it and the fingerprint covers the route and
 *      the body, so a key reused on another route or with another body is a 409 (IdempotencyConflictError);
 *   2. graph build: the render's graphs and limits, in a `render.buildGraph` span; a request no graph can be
 *      built for is a 422 (RequestError on `model`);
 *   3. admission: MAX_WAITING_RENDERS (AdmissionRefusedError, 503) and the client's share of it,
 *      MAX_WAITING_RENDERS_PER_CLIENT (429), skipped when the key attaches to its running or completed render;
 *   4. input images go to the blob store, only now that nothing above refused the request;
 *   5. the GPU lease, when a model-swapping proxy shares the GPU (only now: a refused request swaps nothing);
 *   6. start, with the priority, eagerly when the workers run in this process (RenderService).
 * Nothing is stored or started when a step before 4 refuses. Waiting is `wait` (the route decides how long
 * and what a client going away means).
 *
 * A new entry point, in a few lines:
 *   const started = await submitter.submit({ route: 'openai.images.generations', request, images,
 *     idempotencyKey, body: req.body, priority });
 *   const result = await submitter.wait(started);
 * and renders the errors above (all RequestError but the admission refusal) in its own shape. Async work
 * adds `webhook: { url: body.webhook_url, field: 'webhook_url', async: true, event: 'video' }` (webhook-target.ts).
 */
import type { BuiltRender } from '../contracts/activities.ts';
import type { BlobStore } from '../blobs/store.ts';
import { RequestError } from '../errors/request-error.ts';
import type { DecodedImage } from '../images/decode.ts';
import type { RenderRequest, RenderResult } from '../contracts/render.ts';
import type { SizeFieldNames } from '../contracts/history-size.ts';
import { renderTracer } from '../tracing/spans.ts';
import { buildRender } from './build-render.ts';
import { refuseOversizedRender } from './render-size.ts';
import type { Config } from '../config/config.ts';
import type { Logger } from '../log.ts';
import { Admission } from './admission.ts';
import { waitingRendersQuery } from '../contracts/search-attributes.ts';
import { newRenderId, renderIdForKey, requestFingerprint } from './render-ids.ts';
import { resolveWebhookTarget, type WebhookConfig, type WebhookOption } from './webhook-target.ts';
import { currentClient } from '../fair/client-context.ts';
import { isLoopbackHost } from '../config/loopback.ts';
import type { RenderService, StartedRender } from './render-service.ts';

export interface Submission {
  /**
   * The entry point, e.g. `sdapi.txt2img`: part of the Idempotency-Key fingerprint. Entry points that start
   * the same render (the video API's async and sync routes) may share a name.
   */
  route: string;
  request: RenderRequest;
  /** Decoded input images the request references: stored once nothing refused the request. */
  images?: readonly DecodedImage[];
  idempotencyKey?: string;
  /** What a retry under the same key must repeat, with the route (usually the client's body). */
  body?: unknown;
  /** The client's names of the fields a refusal here may name (its protocol's, from the neutral request); default A1111's. */
  fields?: SizeFieldNames;
  /** Temporal priority key, 1 (most urgent) … 5 (contracts/priority.ts). */
  priority?: number;
  /** A replay runs on its original's task queue; default the service's. */
  taskQueue?: string;
  /**
   * A signed webhook when the render ends (webhook-target.ts): the client's URL and where it gave it, whether
   * the work is async (the configured default applies), the event family and the protocol's own ids.
   */
  webhook?: WebhookOption;
  /**
   * The API key's name the render belongs to (src/renders/owner.ts). Default: the client of the request being
   * served (src/fair/client-context.ts), so every entry point records it without passing it.
   */
  owner?: string;
  /** What the front changed in the request (a size fitted to the grid, frames snapped): kept with the render. */
  warnings?: readonly string[];
}

export interface SubmitterDeps {
  renders: RenderService;
  /** The render's graphs and limits (buildRender with this process's configuration). */
  build: (request: RenderRequest, renderId: string) => BuiltRender;
  /** Where input images go; required when a submission carries images. */
  blobs?: BlobStore;
  /** The bound on waiting renders; absent, every render is admitted. */
  admission?: Admission;
  /** Webhook settings; absent, a submission that asks for a webhook gets none. */
  webhooks?: WebhookConfig;
  /**
   * The GPU lease (gpu/lease-holder.ts), taken once nothing above refused the request: a request answered 4xx
   * must not make the model-swapping proxy evict another group's model for nothing.
   */
  gpuLease?: GpuLease;
}

/** What a submission asks of the GPU lease: take it now, waiting up to `waitMs` for the proxy to grant it. */
export interface GpuLease {
  poke(waitMs: number): Promise<void>;
}

/** How long a render start waits for the lease before going on (a cold GPU entry takes longer). */
const LEASE_POKE_WAIT_MS = 1_000;

export class RenderSubmitter {
  constructor(private readonly deps: SubmitterDeps) {}

  /** Runs the rules above; resolves once the render is started (or attached to, `attached: true`). */
  async submit(s: Submission): Promise<StartedRender> {
    const keyed = s.idempotencyKey !== undefined;
    const client = currentClient();
    const owner = s.owner ?? client.owner;
    const renderId = keyed ? renderIdForKey(s.idempotencyKey!, owner) : newRenderId();
    const webhook = this.deps.webhooks ? resolveWebhookTarget(s.webhook, this.deps.webhooks, renderId) : undefined;
    const fingerprint = keyed ? requestFingerprint(s.route, s.body) : undefined;
    const attach = fingerprint !== undefined && (await this.deps.renders.checkKey(renderId, fingerprint)) === 'attach';
    const built = this.buildGraph(s.request, renderId);
    if (webhook) built.webhook = webhook;
    // Over Temporal's payload limit the render could never run: a 413 naming the field instead.
    refuseOversizedRender(s.request, built, s.fields);
    if (!attach) await this.deps.admission?.admit(sharedClient(client.client));
    // Stored on attach too: content-addressed, so a no-op when the render has them, and should the render
    // fail between the check and the start, the new one the start makes finds its inputs.
    if (s.images && s.images.length > 0) await storeImages(this.blobStore(), s.images);
    // Last before the start, after every check that may refuse: an async 202 then comes once the proxy counts
    // the GPU entry busy, so another group's request sent right after it queues behind the render.
    if (!attach) await this.deps.gpuLease?.poke(LEASE_POKE_WAIT_MS);
    return this.deps.renders.start(s.request, {
      renderId,
      built,
      ...(fingerprint !== undefined ? { fingerprint } : {}),
      ...(s.priority !== undefined ? { priority: s.priority } : {}),
      ...(s.taskQueue !== undefined ? { taskQueue: s.taskQueue } : {}),
      ...(owner !== undefined ? { owner } : {}),
      client: client.client,
      ...(s.warnings && s.warnings.length > 0 ? { warnings: s.warnings } : {}),
    });
  }

  /** The render's result; a failed render is a RenderFailedError (status, kind, where ComfyUI failed). */
  wait(started: StartedRender, opts: { transientBudgetMs?: number } = {}): Promise<RenderResult> {
    return this.deps.renders.wait(started, opts);
  }

  /** The protocol's answer, built by `prepare` from the result (prepared ahead when it can be: RenderService.answer). */
  answer<T>(started: StartedRender, prepare: (result: RenderResult) => Promise<T>): Promise<T> {
    return this.deps.renders.answer(started, prepare);
  }

  private buildGraph(request: RenderRequest, renderId: string): BuiltRender {
    return renderTracer().startActiveSpan('render.buildGraph', { attributes: { 'render.id': renderId, 'render.model': request.model } }, (span) => {
      try {
        return this.deps.build(request, renderId);
      } catch (err) {
        span.setAttribute('render.build_failed', true);
        // The builders are pure: what fails here fails on every try, so it is the request's fault.
        throw new RequestError(422, 'model', `cannot build a render of ${request.model} for this request: ${(err as Error).message}`);
      } finally {
        span.end();
      }
    });
  }

  private blobStore(): BlobStore {
    if (!this.deps.blobs) throw new Error('this submitter has no blob store: it cannot take input images');
    return this.deps.blobs;
  }
}

/**
 * The client admission counts apart, or undefined for one that takes no share of its own: work started outside
 * any request (the CLI at the machine, tests) and loopback addresses (a local reverse proxy speaks for everyone
 * behind it; give its users keys to share between them), as the connection cap does (src/fair/connections.ts).
 */
export function sharedClient(client: string): string | undefined {
  if (!client.startsWith('key:') && !client.startsWith('addr:')) return undefined;
  if (client.startsWith('addr:') && isLoopbackHost(client.slice('addr:'.length).replace(/^::ffff:/i, ''))) return undefined;
  return client;
}

/** What a refused client is told to wait: about the time one render takes on a busy GPU. */
const ADMISSION_RETRY_AFTER_S = 10;

export interface SubmitterOptions {
  renders: RenderService;
  config: Pick<Config, 'MAX_WAITING_RENDERS' | 'MAX_WAITING_RENDERS_PER_CLIENT' | 'TEMPORAL_TASK_QUEUE' | 'STALL_TIMEOUT_MS' | 'HEARTBEAT_TIMEOUT_MS'> &
    WebhookConfig;
  blobs?: BlobStore;
  /** Renders waiting or running, for admission; default Temporal's count of running renders on the queue. */
  waitingRenders?: () => Promise<number>;
  /** One client's renders waiting or running; default Temporal's count by RenderClient. */
  waitingRendersOf?: (client: string) => Promise<number>;
  logger?: Logger;
  gpuLease?: GpuLease;
}

/** The submitter every process builds: this configuration's graphs, admission counted by Temporal. */
export function createSubmitter(opts: SubmitterOptions): RenderSubmitter {
  const { renders, config } = opts;
  const admission = new Admission({
    limit: config.MAX_WAITING_RENDERS,
    retryAfterSeconds: ADMISSION_RETRY_AFTER_S,
    perClientLimit: config.MAX_WAITING_RENDERS_PER_CLIENT ?? Math.max(1, Math.floor(config.MAX_WAITING_RENDERS / 4)),
    count: opts.waitingRenders ?? (async () => (await renders.client.workflow.count(waitingRendersQuery(config.TEMPORAL_TASK_QUEUE))).count),
    countClient:
      opts.waitingRendersOf ?? (async (client) => (await renders.client.workflow.count(waitingRendersQuery(config.TEMPORAL_TASK_QUEUE, client))).count),
    onCountError: (err) => opts.logger?.warn({ err: (err as Error).message }, 'admission: could not count waiting renders'),
  });
  return new RenderSubmitter({
    renders,
    build: (request, renderId) => buildRender(config, request, renderId),
    admission,
    webhooks: config,
    ...(opts.blobs ? { blobs: opts.blobs } : {}),
    ...(opts.gpuLease ? { gpuLease: opts.gpuLease } : {}),
  });
}

/**
 * In its own function on purpose: a loop variable in a caller stays in the suspended async frame for the
 * whole render, pinning the last decoded image per waiting client.
 */
async function storeImages(blobs: BlobStore, images: readonly DecodedImage[]): Promise<void> {
  for (const img of images) {
    await blobs.put(img.bytes, { mime: img.ref.mime, width: img.ref.width, height: img.ref.height });
  }
}
