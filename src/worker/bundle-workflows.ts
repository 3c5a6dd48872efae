/**
 * Bundles the workflow code into one file, run as a short-lived child process of the worker: webpack and
 * swc then never load into the long-running worker, which keeps ~90 MB of RSS out of it for its whole life
 * (measured by bench/memory). Usage: `<node + tsx loader> bundle-workflows.ts <workflows entry> <out file> [interceptor module ...]`.
 */
import { mkdirSync, renameSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { bundleWorkflowCode } from '@temporalio/worker';

const MAP_COMMENT = '//# sourceMappingURL=data:';

/**
 * The bundle as the worker holds it in its heap for its whole life (issue 25: ~5 MB of the worker thread's
 * heap was this bundle). webpack inlines a source map carrying every module's source text again
 * (`sourcesContent`, ~0.6 MB, parsed and kept by the SDK); the map without it still maps stack traces to
 * the files the bundle was built from, which are on disk. And one character above U+00FF anywhere (an arrow
 * or a dash in a comment) makes V8 hold the whole ~1.7 MB script as a two-byte string: escaped as \uXXXX
 * (the same character in a string literal, plain text in a comment), the script is held one byte a
 * character. (The SDK requires an inline map, so the map itself stays.)
 */
function leanBundle(code: string): string {
  const at = code.lastIndexOf(MAP_COMMENT);
  const b64 = code.indexOf('base64,', at);
  if (at < 0 || b64 < 0) return code;
  const map = JSON.parse(Buffer.from(code.slice(b64 + 'base64,'.length).trim(), 'base64').toString('utf8')) as { sourcesContent?: unknown };
  delete map.sourcesContent;
  const body = code.slice(0, at).replace(/[\u0100-\uffff]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
  return `${body}${code.slice(at, b64 + 'base64,'.length)}${Buffer.from(JSON.stringify(map)).toString('base64')}\n`;
}

const [entry, out, ...interceptorModules] = process.argv.slice(2);
if (!entry || !out) {
  process.stderr.write('usage: bundle-workflows <workflows entry> <out file> [interceptor module ...]\n');
  process.exit(2);
}
// The worker names the modules (worker.ts workflowInterceptorModules): bundle and worker cannot disagree.
const { code } = await bundleWorkflowCode({ workflowsPath: entry, workflowInterceptorModules: interceptorModules, logger: undefined });
mkdirSync(path.dirname(out), { recursive: true });
// Atomic: a worker starting concurrently never reads a half-written bundle.
const tmp = `${out}.${process.pid}.tmp`;
writeFileSync(tmp, leanBundle(code));
renameSync(tmp, out);
