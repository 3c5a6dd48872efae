/** Reads a render's runPrompt attempts back from its workflow history: every attempt and its reason. */
import type { Client } from '@temporalio/client';
import { expect } from 'vitest';
import { expectRenderedOnce, fakeStats } from './helpers.ts';

export interface AttemptEvent {
  outcome: 'completed' | 'failed' | 'timed-out' | 'cancelled';
  /** ApplicationFailure type, or the failure's kind (timeout, cancelled). */
  type?: string;
  message?: string;
  /** For completed attempts: the prompt id that produced the result. */
  promptId?: string;
  /** For completed late-bound attempts: the backend the prompt ran on. */
  backend?: string;
}

export async function runPromptAttempts(client: Client, renderId: string): Promise<AttemptEvent[]> {
  const history = await client.workflow.getHandle(renderId).fetchHistory();
  const scheduled = new Set<number>();
  const out: AttemptEvent[] = [];
  const decode = (data: Uint8Array | null | undefined): unknown => (data ? JSON.parse(Buffer.from(data).toString('utf8')) : undefined);
  for (const ev of history.events ?? []) {
    const id = Number(ev.eventId ?? 0);
    const sch = ev.activityTaskScheduledEventAttributes;
    if (sch?.activityType?.name === 'runPrompt') scheduled.add(id);
    const done = ev.activityTaskCompletedEventAttributes;
    if (done && scheduled.has(Number(done.scheduledEventId ?? 0))) {
      const result = decode(done.result?.payloads?.[0]?.data) as { promptId?: string; backend?: string } | undefined;
      out.push({ outcome: 'completed', ...(result?.promptId ? { promptId: result.promptId } : {}), ...(result?.backend ? { backend: result.backend } : {}) });
    }
    const failed = ev.activityTaskFailedEventAttributes;
    if (failed && scheduled.has(Number(failed.scheduledEventId ?? 0))) {
      const f = failed.failure;
      out.push({ outcome: 'failed', type: f?.applicationFailureInfo?.type ?? (f?.canceledFailureInfo ? 'Cancelled' : 'unknown'), message: f?.message ?? '' });
    }
    const timedOut = ev.activityTaskTimedOutEventAttributes;
    if (timedOut && scheduled.has(Number(timedOut.scheduledEventId ?? 0))) {
      out.push({ outcome: 'timed-out', type: 'Timeout', message: timedOut.failure?.message ?? '' });
    }
    const cancelled = ev.activityTaskCanceledEventAttributes;
    if (cancelled && scheduled.has(Number(cancelled.scheduledEventId ?? 0))) out.push({ outcome: 'cancelled', type: 'Cancelled' });
  }
  return out;
}

/**
 * A worker killed mid-prompt: ComfyUI ran the prompt once and was never interrupted, the attempt on the dead
 * worker timed out, and the next one re-attached to the same prompt and completed.
 */
export async function expectReattachedOnce(fakeUrl: string, client: Client, renderId: string, promptId: string): Promise<void> {
  const stats = await fakeStats(fakeUrl);
  expectRenderedOnce(stats, { prompts: 1 });
  expect(stats.interrupts).toBe(0);
  const attempts = await runPromptAttempts(client, renderId);
  expect(attempts.map((a) => a.outcome)).toEqual(['timed-out', 'completed']);
  expect(attempts[1]!.promptId).toBe(promptId);
}
