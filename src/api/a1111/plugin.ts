/**
 * The A1111 protocol (`/sdapi/v1/*`, docs/a1111-contract.md): its render routes (txt2img, img2img, mapped
 * into the neutral request by normalize.ts), the extras, the discovery and catalog routes, and the read routes
 * of the ControlNet extension (`/controlnet/*`), and the rembg and segment-anything extensions' `/rembg` and
 * `/sam/sam-predict`. Its error shape
 * is the front's default (server.ts answers every RequestError in A1111's envelope), so it needs no handler
 * of its own; the other protocols register theirs in their own plugin scope.
 */
import type { FastifyInstance } from 'fastify';
import type { ApiContext } from '../context.ts';
import { registerA1111Catalog } from './catalog-routes.ts';
import { registerControlNetRoutes } from './controlnet-routes.ts';
import { registerA1111Discovery } from './discovery-routes.ts';
import { registerA1111Extras } from './extras-routes.ts';
import { registerA1111Render } from './render-routes.ts';
import { registerSegmentRoutes } from './segment-routes.ts';

export function registerA1111(app: FastifyInstance, ctx: ApiContext): void {
  registerA1111Discovery(app, ctx);
  registerA1111Render(app, ctx);
  registerA1111Extras(app, ctx);
  registerA1111Catalog(app, ctx);
  registerControlNetRoutes(app, ctx);
  registerSegmentRoutes(app, ctx);
}
