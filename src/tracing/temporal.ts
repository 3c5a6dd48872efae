/**
 * Tracing through Temporal with `@temporalio/interceptors-opentelemetry`: the client interceptor puts the
 * caller's span context into the workflow start's headers; the workflow interceptors (run in the sandbox,
 * bundled from their module) open `RunWorkflow` and `StartActivity` spans and pass the context on to each
 * activity's headers; the activity interceptors open `RunActivity` spans under it. Spans made in the sandbox
 * leave it through the `exporter` sink into this process's span processor. Sinks are not called on replay,
 * so a replayed workflow task exports nothing twice.
 *
 * The interceptors only add headers and spans, no commands: a history recorded with tracing replays without
 * it and the other way round (test/unit/replay.test.ts, test/integration/tracing.test.ts), so workers with
 * and without tracing can serve the same renders.
 */
import { createRequire } from 'node:module';
import {
  OpenTelemetryActivityInboundInterceptor,
  OpenTelemetryActivityOutboundInterceptor,
  OpenTelemetryWorkflowClientInterceptor,
  makeWorkflowExporter,
  type OpenTelemetryWorkflowExporter,
} from '@temporalio/interceptors-opentelemetry';
import type { WorkflowClientInterceptor } from '@temporalio/client';
import type { ActivityInterceptorsFactory, InjectedSinks } from '@temporalio/worker';
import type { Sinks, WorkflowInfo } from '@temporalio/workflow';
import type { Tracing } from './tracing.ts';

/** The package's workflow interceptors module (inbound, outbound, internals), for the bundle and the worker. */
export const OTEL_WORKFLOW_INTERCEPTORS_MODULE = createRequire(import.meta.url).resolve('@temporalio/interceptors-opentelemetry/lib/workflow-interceptors');

/** The sink the workflow side calls (`proxySinks().exporter`). */
export interface WorkflowSpanSinks extends Sinks {
  exporter: OpenTelemetryWorkflowExporter;
}

/** What a worker adds when tracing is on. */
export interface WorkerTracing {
  workflowModules: string[];
  activity: ActivityInterceptorsFactory[];
  sinks: InjectedSinks<WorkflowSpanSinks>;
}

export function workerTracing(tracing: Tracing): WorkerTracing {
  return {
    workflowModules: [OTEL_WORKFLOW_INTERCEPTORS_MODULE],
    activity: [
      (ctx) => ({
        inbound: new OpenTelemetryActivityInboundInterceptor(ctx),
        outbound: new OpenTelemetryActivityOutboundInterceptor(ctx),
      }),
    ],
    sinks: { exporter: workflowSpanExporter(tracing) },
  };
}

/**
 * The package's sink, fed a trimmed workflow info: it copies every field of the info it gets into each
 * workflow span's attributes, which would put the memo, search attributes, last result and a dozen objects
 * that are no valid attribute value on every span.
 */
function workflowSpanExporter(tracing: Tracing): InjectedSinks<WorkflowSpanSinks>['exporter'] {
  const inner = makeWorkflowExporter(tracing.processor, tracing.resource);
  return {
    export: {
      fn: (info, spans) => {
        const { workflowId, runId, workflowType, taskQueue, namespace, attempt } = info;
        // Only these become attributes (the sink reads nothing else of the info).
        return inner.export.fn({ workflowId, runId, workflowType, taskQueue, namespace, attempt } as WorkflowInfo, spans);
      },
    },
  };
}

export function clientTracingInterceptors(): WorkflowClientInterceptor[] {
  return [new OpenTelemetryWorkflowClientInterceptor()];
}
