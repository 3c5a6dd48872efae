/**
 * src/worker/workflow-stack-traces.ts against the pinned SDK: its promise hook, installed as a worker installs it
 * when it creates a workflow sandbox, runs for every promise of the isolate until stopWorkflowStackTraces()
 * stops it. (The faults suite checks the running service: `start`'s worker thread answers the stack-trace
 * query with "not enabled".)
 */
import { createRequire } from 'node:module';
import { afterAll, describe, expect, it } from 'vitest';
import { stopWorkflowStackTraces } from '../../src/worker/workflow-stack-traces.ts';

const { globalHandlers } = createRequire(import.meta.url)('@temporalio/worker/lib/workflow/vm-shared.js') as {
  globalHandlers: { install(): void; uninstall(): void; promiseHookInstalled: boolean };
};

/**
 * The hook looks for a promise's workflow through `promise.constructor.constructor` (the realm's Function):
 * a promise class whose `constructor` property is a spy counts the hook's runs for its promises.
 */
function hookRuns(): { runs: () => number; make: () => Promise<void> } {
  let runs = 0;
  class Counted extends Promise<void> {}
  const spy = (): (() => undefined) => {
    runs++;
    return () => undefined;
  };
  Reflect.defineProperty(Counted, 'constructor', { value: spy });
  return { runs: () => runs, make: () => new Counted((resolve) => resolve()) };
}

afterAll(() => globalHandlers.uninstall());

describe('workflow stack traces off in a worker thread that runs the sandbox', () => {
  it('stops the promise hook the SDK installed: promises no longer run it', async () => {
    globalHandlers.install();
    expect(globalHandlers.promiseHookInstalled).toBe(true);
    const before = hookRuns();
    await before.make();
    expect(before.runs()).toBeGreaterThan(0);

    expect(stopWorkflowStackTraces()).toBe(true);
    expect(globalHandlers.promiseHookInstalled).toBe(false);
    const after = hookRuns();
    await after.make();
    expect(after.runs()).toBe(0);
  });

  it('does nothing when no hook is installed', () => {
    expect(stopWorkflowStackTraces()).toBe(false);
  });
});
