/**
 * Imported for its effect, first, by `start`'s worker thread (app/worker-thread-main.ts): the Temporal SDK's
 * in-process workflow bundler is replaced by a stand-in before the SDK loads. `@temporalio/worker` loads its
 * bundler (webpack, memfs, unionfs: ~100 modules, +2.0 MB of heap and +9.7 MB of RSS in a bare node) at its
 * first import, also where nothing is ever bundled: the workers of this service always get a bundle file,
 * dist/'s prebuilt one or one built in a child process (worker.ts bundleWorkflowsInChild). Of the bundler
 * module the SDK's Worker then reads only the default interceptor list, which the stand-in gives the same.
 * Asked to bundle, the stand-in says why it cannot. Reaches into the pinned SDK's layout, as
 * workflow-stack-traces.ts does: test/unit/no-inprocess-bundler.test.ts holds it to that SDK.
 */
import { createRequire, Module } from 'node:module';
import { isMainThread } from 'node:worker_threads';

const require = createRequire(import.meta.url);

/** The SDK module this replaces, and the one interceptor module its list names. */
export const BUNDLER_MODULE = require.resolve('@temporalio/worker/lib/workflow/bundler.js');
const LOG_INTERCEPTOR = require.resolve('@temporalio/worker/lib/workflow-log-interceptor.js');

function cannotBundle(): never {
  throw new Error('no in-process workflow bundler in this thread (worker/no-inprocess-bundler.ts): give the worker a bundle file');
}

/** The stand-in's exports: what the SDK's Worker reads of the bundler module, and refusals for the rest. */
export const standIn = {
  defaultWorkflowInterceptorModules: [LOG_INTERCEPTOR],
  WorkflowCodeBundler: class {
    constructor() {
      cannotBundle();
    }
  },
  bundleWorkflowCode: async (): Promise<never> => cannotBundle(),
};

/**
 * Puts the stand-in in the bundler module's place, unless the SDK (or its bundler) was loaded already, which
 * then stays as it is. Whether the stand-in is in place.
 */
export function keepBundlerOut(): boolean {
  if (!require.cache[BUNDLER_MODULE]) {
    const m = new Module(BUNDLER_MODULE);
    m.filename = BUNDLER_MODULE;
    m.loaded = true;
    m.exports = standIn;
    require.cache[BUNDLER_MODULE] = m;
  }
  return require.cache[BUNDLER_MODULE]?.exports === standIn;
}

// In the worker thread only: imported on a main thread (a check of what each entry loads), it does nothing.
if (!isMainThread) keepBundlerOut();
