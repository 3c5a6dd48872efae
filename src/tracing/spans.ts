/**
 * The service's own spans (the ComfyUI stages of a prompt attempt), under whatever span is active: in an
 * activity that is the interceptor's `RunActivity`. Only the OpenTelemetry API: with tracing off these are
 * its no-op spans, which cost nothing.
 */
import { inspect } from 'node:util';
import { SpanStatusCode, trace, type Attributes, type Span, type SpanKind } from '@opentelemetry/api';

export const comfyTracer = () => trace.getTracer('comfy-durable/comfyui');
/** The front's own steps of a render (building its graphs before the workflow starts). */
export const renderTracer = () => trace.getTracer('comfy-durable/render');

/** Ends a span, marking it failed when given an error. */
export function endSpan(span: Span, err?: unknown): void {
  if (err !== undefined) {
    // A thrown non-Error (a string, an object) is shown as written, not as `[object Object]`.
    const message = err instanceof Error ? err.message : typeof err === 'string' ? err : inspect(err);
    span.recordException(err instanceof Error ? err : message);
    span.setStatus({ code: SpanStatusCode.ERROR, message });
  }
  span.end();
}

/** Runs `fn` inside a child span of the active one (spans `fn` opens nest under it). */
export async function inSpan<T>(name: string, attributes: Attributes, fn: (span: Span) => Promise<T>): Promise<T> {
  return comfyTracer().startActiveSpan(name, { attributes }, async (span) => {
    try {
      const result = await fn(span);
      endSpan(span);
      return result;
    } catch (err) {
      endSpan(span, err);
      throw err;
    }
  });
}

export interface SpanSpec {
  name: string;
  attributes: Attributes;
  kind?: SpanKind;
}

/**
 * Two sibling spans around one call that does two things in turn (submit a prompt, then follow it): the
 * first lasts until `fn` calls `next`, the second from then to the end. A failure ends whichever is open.
 */
export async function inSpanPair<T>(first: SpanSpec, second: SpanSpec, fn: (next: (attributes?: Attributes) => void) => Promise<T>): Promise<T> {
  const tracer = comfyTracer();
  let open = tracer.startSpan(first.name, { attributes: first.attributes, ...(first.kind !== undefined ? { kind: first.kind } : {}) });
  let switched = false;
  const next = (attributes: Attributes = {}): void => {
    if (switched) return;
    switched = true;
    open.setAttributes(attributes);
    endSpan(open);
    open = tracer.startSpan(second.name, { attributes: { ...second.attributes, ...attributes }, ...(second.kind !== undefined ? { kind: second.kind } : {}) });
  };
  try {
    const result = await fn(next);
    endSpan(open);
    return result;
  } catch (err) {
    endSpan(open, err);
    throw err;
  }
}
