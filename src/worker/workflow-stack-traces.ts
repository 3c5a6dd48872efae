/**
 * Workflow stack traces (the `__stack_trace` query behind Temporal UI's "Stack Trace" tab) are collected by a
 * V8 promise hook that the SDK installs for the whole isolate when it creates a workflow sandbox: every promise
 * created runs it, and each one created by workflow code captures a stack and maps it through the bundle's
 * source map (temporalio/sdk-typescript#1587). In the SDK's own workflow thread that touches workflow promises
 * only; in `start`'s worker thread the sandbox shares the isolate with the activities (worker.ts,
 * `sandboxOnThisThread`), so the hook ran for every promise of every ComfyUI call, upload and heartbeat as well.
 * Measured with the overhead bench (bench/README.md, issue 25, sixth pass): the time spent inside the sandbox
 * per render fell from 4.9 to 2.9 ms with the hook off.
 *
 * The SDK has no option for it, so this reaches into its `globalHandlers` (the pinned version's
 * `lib/workflow/vm-shared.js`); anything else found there leaves the hook as it is. Workflows created after the
 * call answer the stack-trace query with the SDK's "stack traces are not enabled on this worker".
 * WORKFLOW_STACK_TRACES=1 keeps them.
 */
import { createRequire } from 'node:module';

interface GlobalHandlers {
  promiseHookInstalled: boolean;
  stopPromiseHook: () => void;
}

const VM_SHARED = '@temporalio/worker/lib/workflow/vm-shared.js';

/** Stops the SDK's workflow stack-trace promise hook in this isolate; false when it was not found installed. */
export function stopWorkflowStackTraces(): boolean {
  let handlers: Partial<GlobalHandlers> | undefined;
  try {
    handlers = (createRequire(import.meta.url)(VM_SHARED) as { globalHandlers?: Partial<GlobalHandlers> }).globalHandlers;
  } catch {
    return false;
  }
  if (handlers?.promiseHookInstalled !== true || typeof handlers.stopPromiseHook !== 'function') return false;
  handlers.stopPromiseHook();
  handlers.promiseHookInstalled = false;
  return true;
}
