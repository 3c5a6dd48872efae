/**
 * What the routes are given: the front's dependencies and the services built from them. Its own module so
 * the routes and the server that registers them do not import each other.
 */
import type { BlobStore } from '../blobs/store.ts';
import type { GpuLease } from '../renders/submit.ts';
import type { Config } from '../config/config.ts';
import type { Logger } from '../log.ts';
import type { RenderService } from '../renders/render-service.ts';
import type { RenderSubmitter } from '../renders/submit.ts';
import type { ComfyCatalog } from './comfy-catalog.ts';
import type { HealthDeps } from './health.ts';
import type { InFlight } from './in-flight.ts';
import type { OptionsStore } from './options-store.ts';

export interface ApiDeps {
  config: Config;
  logger: Logger;
  blobs: BlobStore;
  renders: RenderService;
  options: OptionsStore;
  health: HealthDeps;
  /** Renders waiting or running, for admission control; default: Temporal's count for the task queue. */
  waitingRenders?: () => Promise<number>;
  /** One client's renders waiting or running (default: Temporal's count by RenderClient). */
  waitingRendersOf?: (client: string) => Promise<number>;
  /** Renders this front waits on (tests look in). */
  inFlight?: InFlight;
  /** ComfyUI's file lists and memory for the routes that show them (absent: those lists are empty). */
  catalog?: ComfyCatalog;
  /** A span per request (src/tracing/http.ts), when tracing is on. */
  tracing?: boolean;
  /** The embedded Temporal UI to serve at /temporal/, behind this front's guards (temporal-ui-proxy.ts). */
  temporalUi?: { upstream: string };
  /** The GPU lease held through a model-swapping proxy (gpu/lease-holder.ts), when GPU_LEASE_URL is set. */
  gpuLease?: GpuLease;
}

export interface ApiContext extends ApiDeps {
  inFlight: InFlight;
  /** Every route that starts a render goes through it (renders/submit.ts). */
  submitter: RenderSubmitter;
}
