/**
 * Bundles the workflow code into one file, run as a short-lived child process of the worker: webpack and
 * swc then never load into the long-running worker, which keeps ~90 MB of RSS out of it for its whole life
 * (measured by bench/memory). Usage: `<node + tsx loader> bundle-workflows.ts <workflows entry> <out file> [interceptor module ...]`.
 */
import { mkdirSync, renameSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { bundleWorkflowCode } from '@temporalio/worker';

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
writeFileSync(tmp, code);
renameSync(tmp, out);
