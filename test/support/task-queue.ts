/**
 * What Temporal's matching service holds of a task queue. A SCHEDULED activity in a workflow's description is
 * not yet there: the history service passes it on to matching afterwards (its transfer queue), tens of ms later
 * when idle, more under load; a worker that polls in between takes what matching already has. Tests that free a
 * GPU to see which attempt it takes wait on this, not on the description.
 */
import type { Client } from '@temporalio/client';
import proto from '@temporalio/proto';

/** Activity tasks waiting in matching's backlog of `taskQueue` at priority `key` (approximate, as matching reports). */
export async function backlogAtPriority(client: Client, namespace: string, taskQueue: string, key: number): Promise<number> {
  const { statsByPriorityKey } = await client.workflowService.describeTaskQueue({
    namespace,
    taskQueue: { name: taskQueue, kind: proto.temporal.api.enums.v1.TaskQueueKind.TASK_QUEUE_KIND_NORMAL },
    taskQueueType: proto.temporal.api.enums.v1.TaskQueueType.TASK_QUEUE_TYPE_ACTIVITY,
    reportStats: true,
  });
  return Number(statsByPriorityKey?.[key]?.approximateBacklogCount ?? 0);
}
