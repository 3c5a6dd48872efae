/**
 * Retention without an operator: a Temporal Schedule, `comfy-durable-retention`, starts the `retention`
 * workflow (src/workflows/retention.ts) every RENDER_PRUNE_INTERVAL. A Schedule rather than a timer in the
 * worker: it is durable (it survives every restart and fires once for a whole deployment however many
 * workers run, where each worker's own timer would prune N times), it never overlaps (SKIP: a prune still
 * running makes the next one wait for the interval after), and each run is in history with what it freed.
 *
 * Every worker ensures it at start. Creating an existing schedule fails with ScheduleAlreadyRunning, which
 * is the normal case for all workers but the first; one whose interval differs from this worker's
 * configuration is brought in line (so set RENDER_PRUNE_INTERVAL the same on every worker). `off` deletes it.
 *
 * One schedule per TEMPORAL_TASK_QUEUE, its queue in its id (the default queue keeps the plain id): each
 * deployment prunes its own blob store, and a worker only ever creates, updates or deletes the schedule of
 * its own queue. A shared id let a worker on another queue move the schedule to its queue, so the
 * deployment that owned it stopped pruning its blobs.
 */
import { ScheduleAlreadyRunning, ScheduleNotFoundError, ScheduleOverlapPolicy, type Client } from '@temporalio/client';
import type { Logger } from '../log.ts';

/** The schedule of the default task queue (`renders`). */
export const RETENTION_SCHEDULE_ID = 'comfy-durable-retention';
const DEFAULT_TASK_QUEUE = 'renders';

/** The schedule of `taskQueue`; also the id of the workflows it starts (Temporal appends each run's time). */
export function retentionScheduleId(taskQueue: string): string {
  return taskQueue === DEFAULT_TASK_QUEUE ? RETENTION_SCHEDULE_ID : `${RETENTION_SCHEDULE_ID}@${taskQueue}`;
}
/** The workflow function's name in src/workflows/retention.ts. */
const RETENTION_WORKFLOW_TYPE = 'retention';

export interface RetentionScheduleOptions {
  taskQueue: string;
  /** How often to prune; undefined = off (an existing schedule is deleted). */
  everyMs: number | undefined;
  logger: Logger;
}

export type RetentionScheduleState = 'created' | 'unchanged' | 'updated' | 'deleted' | 'absent';

export async function ensureRetentionSchedule(client: Client, opts: RetentionScheduleOptions): Promise<RetentionScheduleState> {
  const scheduleId = retentionScheduleId(opts.taskQueue);
  const handle = client.schedule.getHandle(scheduleId);
  if (opts.everyMs === undefined) {
    try {
      await handle.delete();
      opts.logger.info({ scheduleId }, 'retention schedule deleted (RENDER_PRUNE_INTERVAL=off)');
      return 'deleted';
    } catch (err) {
      if (err instanceof ScheduleNotFoundError) return 'absent';
      throw err;
    }
  }
  const action = {
    type: 'startWorkflow' as const,
    workflowType: RETENTION_WORKFLOW_TYPE,
    workflowId: scheduleId,
    taskQueue: opts.taskQueue,
    args: [] as [],
  };
  try {
    await client.schedule.create({
      scheduleId,
      spec: { intervals: [{ every: opts.everyMs }] },
      action,
      // A missed run (the whole deployment was down) is made up once, not once per missed interval.
      policies: { overlap: ScheduleOverlapPolicy.SKIP, catchupWindow: Math.max(60_000, opts.everyMs) },
      memo: { purpose: 'comfy-durable render retention: deletes renders and blobs older than RENDER_RETENTION_DAYS' },
    });
    opts.logger.info({ scheduleId, everyMs: opts.everyMs }, 'retention schedule created');
    return 'created';
  } catch (err) {
    if (!(err instanceof ScheduleAlreadyRunning)) throw err;
  }
  const described = await handle.describe();
  const every = described.spec.intervals?.[0]?.every;
  const queue = described.action.type === 'startWorkflow' ? described.action.taskQueue : undefined;
  const overlap = described.policies.overlap;
  if (described.spec.intervals?.length === 1 && every === opts.everyMs && queue === opts.taskQueue && overlap === ScheduleOverlapPolicy.SKIP)
    return 'unchanged';
  await handle.update((prev) => ({
    ...prev,
    spec: { intervals: [{ every: opts.everyMs! }] },
    action,
    policies: { ...prev.policies, overlap: ScheduleOverlapPolicy.SKIP, catchupWindow: Math.max(60_000, opts.everyMs!) },
  }));
  opts.logger.warn({ scheduleId, everyMs: opts.everyMs, previousEveryMs: every, previousQueue: queue }, "retention schedule updated to this worker's settings");
  return 'updated';
}
