/**
 * Render retention in Temporal: the namespace's workflow execution retention (closed workflows and their
 * histories are deleted that long after they close). Set on the embedded dev server at start; in production
 * it is a property of the namespace (`temporal operator namespace update --retention 7d <namespace>`).
 */
import type { Connection } from '@temporalio/client';
type Long = NonNullable<NonNullable<Parameters<Connection['workflowService']['updateNamespace']>[0]['config']>['workflowExecutionRetentionTtl']>['seconds'];
import type { Logger } from '../log.ts';

export async function ensureNamespaceRetention(connection: Connection, namespace: string, days: number, logger: Logger): Promise<void> {
  // At least a day: the namespace retention is the backstop behind the retention schedule's prune, which
  // deletes renders itself once they are RENDER_RETENTION_DAYS old, however short that is.
  const seconds = Math.max(86_400, Math.round(days * 86_400));
  const described = await connection.workflowService.describeNamespace({ namespace });
  const current = Number(described.config?.workflowExecutionRetentionTtl?.seconds ?? 0);
  if (current === seconds) return;
  await connection.workflowService.updateNamespace({
    namespace,
    // protobufjs takes a Long for int64 fields; a number is what it sends (cast: the generated type is Long).
    config: { workflowExecutionRetentionTtl: { seconds: seconds as unknown as Long } },
  });
  logger.info({ namespace, days, previousDays: current / 86_400 }, 'render retention set on the namespace');
}
