/**
 * Tracing configuration: off by default; OTEL_EXPORTER_OTLP_ENDPOINT turns on OTLP export to
 * `<endpoint>/v1/traces` (checked against a real HTTP receiver in this process).
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { trace } from '@opentelemetry/api';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/config.ts';
import { otlpTracesUrl, startTracing } from '../../src/tracing/tracing.ts';

describe('tracing configuration', () => {
  it('is off unless an OTLP endpoint is set: nothing registered, spans are no-ops', async () => {
    expect(await startTracing(loadConfig({}))).toBeUndefined();
    expect(trace.getTracer('t').startSpan('x').isRecording()).toBe(false);
  });

  it('sends to <endpoint>/v1/traces, or to the traces endpoint as given', () => {
    expect(otlpTracesUrl(loadConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318' }))).toBe('http://collector:4318/v1/traces');
    expect(otlpTracesUrl(loadConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318/' }))).toBe('http://collector:4318/v1/traces');
    expect(
      otlpTracesUrl(loadConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318', OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'https://traces.example/otlp' })),
    ).toBe('https://traces.example/otlp');
    expect(otlpTracesUrl(loadConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: ' ' }))).toBeUndefined();
  });

  it('rejects an endpoint that is not an http(s) URL, naming the variable', () => {
    expect(() => loadConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: 'collector:4318' })).toThrow(/OTEL_EXPORTER_OTLP_ENDPOINT/);
  });

  it('exports spans over OTLP/HTTP to the configured endpoint, flushed on shutdown', async () => {
    const received: { path: string; body: string }[] = [];
    const server = http.createServer((req, res) => {
      let body = '';
      req.on('data', (d: Buffer) => (body += d.toString()));
      req.on('end', () => {
        received.push({ path: req.url ?? '', body });
        res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
      });
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const { port } = server.address() as AddressInfo;
    try {
      const tracing = await startTracing(loadConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${port}`, OTEL_SERVICE_NAME: 'cd-test' }), {
        mode: 'worker',
      });
      expect(tracing).toBeDefined();
      trace.getTracer('t').startSpan('a-span-for-the-collector').end();
      await tracing!.shutdown();
      expect(received.map((r) => r.path)).toEqual(['/v1/traces']);
      expect(received[0]!.body).toContain('a-span-for-the-collector');
      expect(received[0]!.body).toContain('cd-test');
      // Unregistered again: a later span is a no-op.
      expect(trace.getTracer('t').startSpan('after').isRecording()).toBe(false);
    } finally {
      server.close();
    }
  });
});
