/**
 * `renders prune --older-than D`: retention now. Deletes closed renders that ended more than D ago from
 * Temporal, and every blob that no remaining render references and that is itself older than D (inputs,
 * outputs, and orphans of refused requests). Safe for replays: a blob a remaining render needs (its inputs
 * for a replay, its outputs for the gallery) is kept; a replay of a pruned render fails with a clear message
 * (RenderNotFoundError, or NotReplayableError when only its images are gone). With a co-located ComfyUI
 * (COMFYUI_INPUT_DIR), the input images we uploaded to it that are older than D go too.
 *
 * Works on either blob store through its inventory (BlobStore.list / delete). Run by `renders prune` and by
 * the retention schedule's activity (src/activities/prune-expired.ts). A blob is content-addressed, so a new
 * render may reuse an old blob (the same init image again): storing it again makes it young (the stores renew
 * its age), renders that started while this prune listed and every running render (whose stored items are in
 * its activities' results) are read again just before blobs are deleted, and what they reference is kept.
 */
import { readdir, stat, unlink } from 'node:fs/promises';
import path from 'node:path';
import { WorkflowNotFoundError, type Client } from '@temporalio/client';
import type { PruneResult } from '../contracts/activities.ts';
import type { BlobRef } from '../contracts/render.ts';
import { INPUT_SUBFOLDER } from '../models/plan.ts';
import type { BlobStore } from '../blobs/store.ts';

export interface PruneOptions {
  client: Client;
  namespace: string;
  blobs: Pick<BlobStore, 'list' | 'delete'>;
  olderThanMs: number;
  dryRun?: boolean;
  /** ComfyUI's input folder, when it is on this machine (off by default). */
  comfyInputDir?: string;
  now?: Date;
  /** Called as work goes on (the activity heartbeats with it). */
  progress?: () => void;
}

const refsOf = (value: unknown): BlobRef[] => {
  const out: BlobRef[] = [];
  const visit = (v: unknown): void => {
    if (!v || typeof v !== 'object') return;
    if (Array.isArray(v)) return v.forEach(visit);
    const o = v as Record<string, unknown>;
    if (typeof o.sha256 === 'string' && typeof o.mime === 'string') out.push(o as unknown as BlobRef);
    else Object.values(o).forEach(visit);
  };
  visit(value);
  return out;
};

/** How many blobs one delete call takes (S3's DeleteObjects limit). */
const DELETE_BATCH = 1000;

export async function pruneRenders(opts: PruneOptions): Promise<PruneResult> {
  const now = opts.now ?? new Date();
  const cutoff = new Date(now.getTime() - opts.olderThanMs);
  const cutoffIso = cutoff.toISOString();
  const startedAt = new Date();
  const query = (where: string) => `WorkflowType = 'render' AND ${where}`;
  const progress = opts.progress ?? (() => undefined);

  // Renders past retention: closed before the cutoff.
  const old: string[] = [];
  for await (const w of opts.client.workflow.list({ query: query(`ExecutionStatus != 'Running' AND CloseTime < '${cutoffIso}'`) })) old.push(w.workflowId);

  // Every other render keeps what it references: its request's inputs and its outputs.
  const keep = new Set<string>();
  const remaining = `(ExecutionStatus = 'Running' OR CloseTime >= '${cutoffIso}')`;
  const kept = await collectRefs(opts.client, query(remaining), keep, progress);

  let blobsDeleted = 0;
  let bytesFreed = 0;
  const candidates: Array<{ sha256: string; size: number }> = [];
  let listed = 0;
  for await (const b of opts.blobs.list()) {
    if (++listed % 1000 === 0) progress();
    if (keep.has(b.sha256) || b.storedAtMs >= cutoff.getTime()) continue;
    candidates.push({ sha256: b.sha256, size: b.size });
  }
  // While we listed, renders may have started, and running ones may have stored more items (a re-stored blob
  // is young again, but the listing may predate that): read the renders that started since shortly before we
  // began (slack for visibility lag) and every running one again.
  const since = new Date(startedAt.getTime() - 60_000).toISOString();
  await collectRefs(opts.client, query(`((StartTime >= '${since}' AND ${remaining}) OR ExecutionStatus = 'Running')`), keep, progress);
  const doomed = candidates.filter((b) => !keep.has(b.sha256));
  for (let i = 0; i < doomed.length; i += DELETE_BATCH) {
    const batch = doomed.slice(i, i + DELETE_BATCH);
    if (!opts.dryRun) await opts.blobs.delete(batch.map((b) => b.sha256));
    blobsDeleted += batch.length;
    bytesFreed += batch.reduce((n, b) => n + b.size, 0);
    progress();
  }

  if (!opts.dryRun) {
    for (const id of old) {
      await opts.client.workflowService.deleteWorkflowExecution({ namespace: opts.namespace, workflowExecution: { workflowId: id } });
      progress();
    }
  }

  let comfyInputsDeleted = 0;
  if (opts.comfyInputDir) {
    // Only files we uploaded: `<input>/comfy-durable/<sha256>.<ext>` (src/models/plan.ts), and none a
    // remaining render may still need.
    const dir = path.join(opts.comfyInputDir, INPUT_SUBFOLDER);
    let names: string[];
    try {
      names = await readdir(dir);
    } catch {
      names = [];
    }
    for (const name of names) {
      const m = /^([0-9a-f]{64})\.(png|jpe?g|webp)$/i.exec(name);
      if (!m || keep.has(m[1]!)) continue;
      const file = path.join(dir, name);
      const st = await stat(file).catch(() => undefined);
      if (!st || st.mtimeMs >= cutoff.getTime()) continue;
      comfyInputsDeleted++;
      bytesFreed += st.size;
      if (!opts.dryRun) await unlink(file).catch(() => undefined);
    }
  }

  return { dryRun: opts.dryRun ?? false, cutoff: cutoffIso, rendersDeleted: old, rendersKept: kept, blobsDeleted, bytesFreed, comfyInputsDeleted };
}

/** Adds the blob references in the inputs and results of the renders `query` finds to `keep`; returns how many. */
async function collectRefs(client: Client, query: string, keep: Set<string>, progress: () => void): Promise<number> {
  let n = 0;
  const converter = client.options.loadedDataConverter.payloadConverter;
  for await (const w of client.workflow.list({ query })) {
    n++;
    let history;
    try {
      history = await client.workflow.getHandle(w.workflowId, w.runId).fetchHistory();
    } catch (err) {
      // Deleted since the listing (visibility lags deletion: an earlier prune's renders are still listed for a
      // while): it references nothing any more.
      if (err instanceof WorkflowNotFoundError) continue;
      // Unreadable history: keep everything rather than guess (abort the blob part).
      throw new Error(`could not read the history of ${w.workflowId}: refusing to delete blobs it may need`, { cause: err });
    }
    for (const ev of history.events ?? []) {
      // Inputs, results, and what each finished activity returned: a running render's items already stored
      // are only in their activities' results until the render completes.
      const payloads =
        ev.workflowExecutionStartedEventAttributes?.input?.payloads ??
        ev.workflowExecutionCompletedEventAttributes?.result?.payloads ??
        ev.activityTaskCompletedEventAttributes?.result?.payloads ??
        [];
      for (const p of payloads) for (const ref of refsOf(converter.fromPayload(p))) keep.add(ref.sha256);
    }
    progress();
  }
  return n;
}
