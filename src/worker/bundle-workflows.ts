/**
 * Bundles the workflow code into one file, run as a short-lived child process of the worker: webpack and
 * swc then never load into the long-running worker, which keeps ~90 MB of RSS out of it for its whole life
 * (measured by bench/memory). Usage: `<node + tsx loader> bundle-workflows.ts <workflows entry> <out file>`.
 */
import { mkdirSync, renameSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { bundleWorkflowCode } from '@temporalio/worker';
import { OUTCOME_INTERCEPTOR_MODULE } from '../metrics/render-sinks.ts';

const [entry, out] = process.argv.slice(2);
if (!entry || !out) {
  process.stderr.write('usage: bundle-workflows <workflows entry> <out file>\n');
  process.exit(2);
}
const { code } = await bundleWorkflowCode({ workflowsPath: entry, workflowInterceptorModules: [OUTCOME_INTERCEPTOR_MODULE], logger: undefined });
mkdirSync(path.dirname(out), { recursive: true });
// Atomic: a worker starting concurrently never reads a half-written bundle.
const tmp = `${out}.${process.pid}.tmp`;
writeFileSync(tmp, code);
renameSync(tmp, out);
