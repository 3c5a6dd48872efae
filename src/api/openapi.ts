/**
 * `/openapi.json` and `/docs` (Swagger UI), as A1111's FastAPI serves them. The document is built from the
 * zod schemas each route declares (route-schemas.ts), so it lists every route and cannot drift from what the
 * routes accept: a route registered without a schema shows up bare, and the route-coverage test fails.
 */
import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import type { FastifyInstance, RouteOptions } from 'fastify';
import { jsonSchemaTransform, type ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';

/** Paths these routes serve, open like the gallery (they hold no data). */
export const DOCS_PREFIX = '/docs';
export const OPENAPI_PATH = '/openapi.json';

export interface RegisteredRoute {
  method: string;
  url: string;
  schema: RouteOptions['schema'];
}

const registered = new WeakMap<FastifyInstance, RegisteredRoute[]>();

/** Every route registered after registerOpenApi, as Fastify's onRoute hook saw it (HEAD twins included). */
export function registeredRoutes(app: FastifyInstance): readonly RegisteredRoute[] {
  return registered.get(app) ?? [];
}

export async function registerOpenApi(app: FastifyInstance): Promise<void> {
  const routes: RegisteredRoute[] = [];
  registered.set(app, routes);
  app.addHook('onRoute', (route) => {
    for (const method of [route.method].flat()) routes.push({ method, url: route.url, schema: route.schema });
  });
  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'comfy-durable: AUTOMATIC1111, OpenAI image and video APIs on durable ComfyUI renders',
        version: '1.0.0',
        description:
          'With API_TOKEN set, every route but /health, /ready, /internal/ping, the gallery and these docs needs `Authorization: Bearer <token>` (or Basic with the token as password).',
      },
      tags: [
        { name: 'A1111', description: "AUTOMATIC1111's /sdapi/v1 API" },
        { name: 'ControlNet', description: "The sd-webui-controlnet extension's /controlnet API (units go in alwayson_scripts.controlnet)" },
        { name: 'OpenAI images', description: "OpenAI's image API and model list" },
        { name: 'Videos', description: "vLLM-Omni's / OpenAI's video API" },
        { name: 'Renders', description: 'Operators: list, inspect, replay and cancel renders; the gallery' },
        { name: 'Operations', description: 'Health, readiness, metrics, this document' },
      ],
    },
    transform: jsonSchemaTransform,
  });
  await app.register(swaggerUi, { routePrefix: DOCS_PREFIX });
  // Built (and cached by @fastify/swagger) at start-up, not on the first request: converting every route's
  // schemas takes tens of milliseconds of the event loop, which renders in flight must not wait for.
  app.addHook('onReady', async () => {
    app.swagger();
  });
  app.withTypeProvider<ZodTypeProvider>().get(
    OPENAPI_PATH,
    {
      schema: {
        summary: 'This document (OpenAPI 3.1), built from the schemas the routes declare',
        tags: ['Operations'],
        response: { 200: z.looseObject({ openapi: z.string(), paths: z.record(z.string(), z.unknown()) }).describe('The OpenAPI document') },
      },
    },
    // swagger's union covers Swagger 2 documents; this one is OpenAPI 3.1.
    async () => app.swagger() as unknown as { openapi: string; paths: Record<string, unknown> },
  );
}
