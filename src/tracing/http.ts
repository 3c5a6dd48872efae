/**
 * One SERVER span per HTTP request of the front, the root of a render's trace (or a child of the caller's,
 * when the request carries a W3C `traceparent`). Manual hooks rather than an auto-instrumentation: the span
 * opens in the first `onRequest` hook, which runs the rest of the request in its context (the handler, and so
 * the workflow start by the Temporal client interceptor, become its children; a body that arrives later keeps
 * it too), and ends in `onResponse`, or when the client goes away.
 */
import { ROOT_CONTEXT, SpanKind, SpanStatusCode, context, propagation, trace, type Span } from '@opentelemetry/api';
import type { FastifyInstance, FastifyRequest } from 'fastify';

const TRACER = 'comfy-durable/http';

export function registerHttpTracing(app: FastifyInstance): void {
  const tracer = trace.getTracer(TRACER);
  const spans = new WeakMap<FastifyRequest, Span>();
  const end = (req: FastifyRequest, status: number | undefined, aborted: boolean): void => {
    const span = spans.get(req);
    if (!span) return;
    spans.delete(req);
    if (status !== undefined) span.setAttribute('http.response.status_code', status);
    if (aborted) span.setStatus({ code: SpanStatusCode.ERROR, message: 'client closed the connection' });
    else if (status !== undefined && status >= 500) span.setStatus({ code: SpanStatusCode.ERROR });
    span.end();
  };

  app.addHook('onRequest', (req, _reply, done) => {
    // Route templates, not raw URLs: one span name per route, whatever the ids in the path.
    const route = req.routeOptions.url;
    const parent = propagation.extract(ROOT_CONTEXT, req.headers);
    const span = tracer.startSpan(
      `${req.method} ${route ?? 'unmatched'}`,
      {
        kind: SpanKind.SERVER,
        attributes: {
          'http.request.method': req.method,
          'url.path': req.url.split('?')[0] ?? '',
          ...(route ? { 'http.route': route } : {}),
        },
      },
      parent,
    );
    spans.set(req, span);
    context.with(trace.setSpan(parent, span), done);
  });
  app.addHook('onResponse', (req, reply, done) => {
    end(req, reply.statusCode, false);
    done();
  });
  app.addHook('onRequestAbort', (req, done) => {
    end(req, undefined, true);
    done();
  });
}
