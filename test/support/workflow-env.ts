/**
 * What the workflow test files (test/workflows) share: Temporal's TestWorkflowEnvironment on the local `temporal`
 * CLI, with the service's search attributes, and the stop of the workers they run on it.
 */
import { TestWorkflowEnvironment } from '@temporalio/testing';
import type { Worker } from '@temporalio/worker';
import { SEARCH_ATTRIBUTES } from '../../src/contracts/search-attributes.ts';
import { findTemporalBinary } from '../../src/temporal/binary.ts';

export function startWorkflowEnv(): Promise<TestWorkflowEnvironment> {
  return TestWorkflowEnvironment.createLocal({
    server: { executable: { type: 'existing-path', path: findTemporalBinary(process.env.TEMPORAL_CLI_PATH) }, searchAttributes: [...SEARCH_ATTRIBUTES] },
  });
}

/** Stops the workers, then the server, whatever the workers did: one that failed must not leave the server running. */
export async function stopWorkflowEnv(env: TestWorkflowEnvironment | undefined, workers: Worker[], running: Promise<unknown> | undefined): Promise<void> {
  try {
    for (const w of workers) if (w.getState() === 'RUNNING') w.shutdown();
    await running;
  } finally {
    await env?.teardown();
  }
}
