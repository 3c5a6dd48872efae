/**
 * Retention without an operator: a Temporal Schedule, `comfy-durable-retention`, starts the `retention`
 * workflow (src/workflows/retention.ts) every RENDER_PRUNE_INTERVAL. A Schedule rather than a timer in the
 * worker: it is durable (it survives every restart and fires once for a whole deployment however many
 * workers run, where each worker's own timer would prune N times), it never overlaps (SKIP: a prune still
 * running makes the next one wait for the interval after), and each run is in history with what it freed.
 *
 * Every worker ensures it at start. Creating an existing schedule fails with ScheduleAlreadyRunning, which
 * is the normal case for all workers but the first; one whose interval or queue differs from this worker's
 * configuration is brought in line (so set RENDER_PRUNE_INTERVAL the same on every worker). `off` deletes it.
 */
import { ScheduleAlreadyRunning, ScheduleNotFoundError, ScheduleOverlapPolicy, type Client } from '@temporalio/client';
import type { Logger } from '../log.ts';

export const RETENTION_SCHEDULE_ID = 'comfy-durable-retention';
/** The id of the workflows it starts (Temporal appends each run's scheduled time). */
export const RETENTION_WORKFLOW_ID = 'comfy-durable-retention';
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
  const handle = client.schedule.getHandle(RETENTION_SCHEDULE_ID);
  if (opts.everyMs === undefined) {
    try {
      await handle.delete();
      opts.logger.info({ scheduleId: RETENTION_SCHEDULE_ID }, 'retention schedule deleted (RENDER_PRUNE_INTERVAL=off)');
      return 'deleted';
    } catch (err) {
      if (err instanceof ScheduleNotFoundError) return 'absent';
      throw err;
    }
  }
  const action = {
    type: 'startWorkflow' as const,
    workflowType: RETENTION_WORKFLOW_TYPE,
    workflowId: RETENTION_WORKFLOW_ID,
    taskQueue: opts.taskQueue,
    args: [] as [],
  };
  try {
    await client.schedule.create({
      scheduleId: RETENTION_SCHEDULE_ID,
      spec: { intervals: [{ every: opts.everyMs }] },
      action,
      // A missed run (the whole deployment was down) is made up once, not once per missed interval.
      policies: { overlap: ScheduleOverlapPolicy.SKIP, catchupWindow: Math.max(60_000, opts.everyMs) },
      memo: { purpose: 'comfy-durable render retention: deletes renders and blobs older than RENDER_RETENTION_DAYS' },
    });
    opts.logger.info({ scheduleId: RETENTION_SCHEDULE_ID, everyMs: opts.everyMs }, 'retention schedule created');
    return 'created';
  } catch (err) {
    if (!(err instanceof ScheduleAlreadyRunning)) throw err;
  }
  const described = await handle.describe();
  const every = described.spec.intervals?.[0]?.every;
  const queue = described.action.type === 'startWorkflow' ? described.action.taskQueue : undefined;
  const overlap = described.policies.overlap;
  if (described.spec.intervals?.length === 1 && every === opts.everyMs && queue === opts.taskQueue && overlap === ScheduleOverlapPolicy.SKIP) return 'unchanged';
  await handle.update((prev) => ({
    ...prev,
    spec: { intervals: [{ every: opts.everyMs! }] },
    action,
    policies: { ...prev.policies, overlap: ScheduleOverlapPolicy.SKIP, catchupWindow: Math.max(60_000, opts.everyMs!) },
  }));
  opts.logger.warn({ scheduleId: RETENTION_SCHEDULE_ID, everyMs: opts.everyMs, previousEveryMs: every, previousQueue: queue }, 'retention schedule updated to this worker\'s settings');
  return 'updated';
}
