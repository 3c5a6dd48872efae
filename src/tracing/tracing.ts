/**
 * OpenTelemetry tracing of one process: a tracer provider registered as the global one (so the Temporal
 * interceptors, the HTTP hooks and the activities' own spans all find it), with the W3C trace-context
 * propagator and async-hooks context. Off unless an OTLP endpoint is configured (or a test hands in its own
 * exporter): then nothing is registered, every span is the API's no-op and the workflow bundle carries no
 * tracing interceptor, exactly as before tracing existed. The SDK (exporter, provider, resources: ~300
 * modules) is imported only when tracing is on: off, it is never loaded, in neither of `start`'s threads
 * (bench/README.md, issue 25).
 */
import { context, propagation, trace } from '@opentelemetry/api';
import type { Resource } from '@opentelemetry/resources';
import type { SpanExporter, SpanProcessor } from '@opentelemetry/sdk-trace-base';
import type { Config } from '../config/config.ts';
import { trimTrailingSlashes } from '../text/trim.ts';

export interface Tracing {
  /** Ends every span of the process; the workflow spans (created in the sandbox) are handed to it by a sink. */
  processor: SpanProcessor;
  resource: Resource;
  /** Flush what is buffered and unregister the globals. */
  shutdown(): Promise<void>;
}

export interface TracingOptions {
  /** Spans go here instead of OTLP, each as it ends (tests: an InMemorySpanExporter). */
  exporter?: SpanExporter;
  /** Which part of the service this process runs (`start`, `worker`, `api`): a resource attribute. */
  mode?: string;
}

/** Where OTLP spans go: the traces endpoint as given, else `<endpoint>/v1/traces` (the OTLP rule). */
export function otlpTracesUrl(config: Pick<Config, 'OTEL_EXPORTER_OTLP_ENDPOINT' | 'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT'>): string | undefined {
  if (config.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) return config.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT;
  if (!config.OTEL_EXPORTER_OTLP_ENDPOINT) return undefined;
  return `${trimTrailingSlashes(config.OTEL_EXPORTER_OTLP_ENDPOINT)}/v1/traces`;
}

/** Starts tracing when configured; undefined (and nothing registered, nothing of the SDK loaded) when off. */
export async function startTracing(config: Config, opts: TracingOptions = {}): Promise<Tracing | undefined> {
  const url = otlpTracesUrl(config);
  if (!opts.exporter && !url) return undefined;
  const [{ OTLPTraceExporter }, { Resource, envDetectorSync }, { BatchSpanProcessor, SimpleSpanProcessor }, { NodeTracerProvider }] = await Promise.all([
    import('@opentelemetry/exporter-trace-otlp-http'),
    import('@opentelemetry/resources'),
    import('@opentelemetry/sdk-trace-base'),
    import('@opentelemetry/sdk-trace-node'),
  ]);
  // Batched for OTLP (one POST per batch, off the request path); one by one for a test's exporter, so a
  // test sees a span as soon as it ended.
  const processor = opts.exporter ? new SimpleSpanProcessor(opts.exporter) : new BatchSpanProcessor(new OTLPTraceExporter({ url: url! }));
  const resource = Resource.default()
    .merge(new Resource({ 'service.name': config.OTEL_SERVICE_NAME, ...(opts.mode ? { 'comfy_durable.mode': opts.mode } : {}) }))
    // OTEL_RESOURCE_ATTRIBUTES, the standard way to add deployment attributes (host, region, ...).
    .merge(envDetectorSync.detect());
  const provider = new NodeTracerProvider({ resource, spanProcessors: [processor] });
  provider.register();
  return {
    processor,
    resource,
    shutdown: async () => {
      await provider.shutdown();
      trace.disable();
      context.disable();
      propagation.disable();
    },
  };
}
