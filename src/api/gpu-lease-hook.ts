/**
 * Routes that start renders take the GPU lease before they start one (gpu/lease-holder.ts): an async route then
 * answers 202 only once the model-swapping proxy counts the GPU entry busy, so another group's request sent right
 * after it queues behind the render instead of taking the GPU first. Every other route (status polls, lists,
 * discovery) leaves the lease alone: a poll never loads the GPU.
 */
import type { FastifyInstance } from 'fastify';

/** Route patterns (as registered) whose POST starts a render. */
export const RENDER_STARTING_ROUTES: ReadonlySet<string> = new Set([
  '/sdapi/v1/txt2img',
  '/sdapi/v1/img2img',
  '/sdapi/v1/extra-single-image',
  '/sdapi/v1/extra-batch-images',
  '/v1/images/generations',
  '/v1/images/edits',
  '/v1/images/variations',
  '/v1/videos',
  '/v1/videos/sync',
  '/renders/:id/replay',
  '/prompt',
  '/api/prompt',
]);

/** A workflow file's endpoint (`/workflows/<name>`, one route per file). */
const WORKFLOW_FILE_ROUTE = /^\/workflows\/[a-z0-9-]+$/;

export interface GpuLease {
  poke(waitMs: number): Promise<void>;
}

/** How long a render-starting request waits for the lease before going on (a cold GPU entry takes longer). */
const POKE_WAIT_MS = 1_000;

export function registerGpuLeaseHook(app: FastifyInstance, lease: GpuLease): void {
  app.addHook('preHandler', async (req) => {
    const url = req.routeOptions.url ?? '';
    if (req.method !== 'POST' || !(RENDER_STARTING_ROUTES.has(url) || WORKFLOW_FILE_ROUTE.test(url))) return;
    await lease.poke(POKE_WAIT_MS);
  });
}
