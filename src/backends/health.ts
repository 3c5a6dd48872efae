/**
 * Which ComfyUI backends are unhealthy (the last step of the stall escalation, docs/durability.md): a prompt stalled, its targeted interrupt did
 * not stop it and neither did `/free`, so ComfyUI's worker thread is wedged (a hung node deaf to interrupts,
 * or a dead worker thread with an item stuck in `queue_running`: ComfyUI has no watchdog). Nothing will run there
 * until someone restarts it.
 *
 * The state is one small JSON marker file per backend under `DATA_DIR/backend-health/`:
 * - the worker's activities write and clear it;
 * - an `api`-only front, another process, reads it for `/health` and the backend gauge. Front and worker
 *   already share DATA_DIR (the blob store lives there), so no new channel is needed, and a mark survives a
 *   worker restart, which is right: restarting the worker does not unstick ComfyUI.
 *
 * Recovery: a mark is cleared when a prompt on the backend succeeds, or when a probe finds ComfyUI answering
 * and the stuck prompt gone from its queue (ComfyUI was restarted, or the node finally returned).
 *
 * A backend that refused every connection mid-prompt is marked too (its process is gone, and the item moves
 * to another backend). Should it come back still holding that prompt (it was only out of reach, behind a
 * proxy or tunnel that went away), the probe cancels the prompt before the mark is cleared: rendered once.
 */
import { createHash } from 'node:crypto';
import { mkdirSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { z } from 'zod';
import type { ComfyClient } from '../comfyui/client.ts';
import type { Logger } from '../log.ts';
import type { Backend } from '../contracts/render.ts';

const markSchema = z.object({
  backend: z.string(),
  url: z.string(),
  reason: z.string(),
  since: z.number(),
  stuckPromptId: z.string().optional(),
  /** Refused connections mid-prompt: the prompt whose item then moved to another backend. */
  abandonedPromptId: z.string().optional(),
});

export type UnhealthyMark = z.infer<typeof markSchema>;

export class BackendHealth {
  readonly dir: string;

  constructor(
    dataDir: string,
    private readonly logger?: Logger,
  ) {
    this.dir = path.join(dataDir, 'backend-health');
  }

  /**
   * Keyed by id AND url: ids are positional (`comfyui-0`), and two workers each configured with one
   * different ComfyUI would otherwise overwrite each other's marks in a shared DATA_DIR.
   */
  private file(backend: Pick<Backend, 'id' | 'url'>): string {
    const h = createHash('sha256').update(backend.url).digest('hex').slice(0, 12);
    return path.join(this.dir, `${backend.id}-${h}.json`);
  }

  get(backend: Pick<Backend, 'id' | 'url'>): UnhealthyMark | undefined {
    let raw: string;
    try {
      raw = readFileSync(this.file(backend), 'utf8');
    } catch {
      return undefined;
    }
    try {
      const r = markSchema.safeParse(JSON.parse(raw));
      return r.success ? r.data : undefined;
    } catch {
      // Half-written files cannot happen (rename below), but a hand-edited one must not break /health.
      return undefined;
    }
  }

  markUnhealthy(backend: Pick<Backend, 'id' | 'url'>, mark: { reason: string; stuckPromptId?: string; abandonedPromptId?: string }): UnhealthyMark {
    const m: UnhealthyMark = { backend: backend.id, url: backend.url, reason: mark.reason, since: Date.now() };
    if (mark.stuckPromptId) m.stuckPromptId = mark.stuckPromptId;
    if (mark.abandonedPromptId) m.abandonedPromptId = mark.abandonedPromptId;
    mkdirSync(this.dir, { recursive: true });
    const target = this.file(backend);
    const tmp = `${target}.${process.pid}.tmp`;
    writeFileSync(tmp, JSON.stringify(m));
    renameSync(tmp, target);
    this.logger?.error({ backend: backend.id, url: backend.url, reason: m.reason, stuckPromptId: m.stuckPromptId }, 'ComfyUI backend marked unhealthy');
    return m;
  }

  /** Clears a mark; a no-op (and no log) when there is none. */
  markHealthy(backend: Pick<Backend, 'id' | 'url'>, why: string): void {
    const had = this.get(backend);
    if (!had) return;
    rmSync(this.file(backend), { force: true });
    this.logger?.warn({ backend: backend.id, url: backend.url, why, unhealthyForMs: Date.now() - had.since }, 'ComfyUI backend healthy again');
  }

  /** backend id → reason, for `/health` and the gauge (HealthDeps.unhealthy). */
  unhealthy(backends: readonly Pick<Backend, 'id' | 'url'>[]): Map<string, string> {
    const out = new Map<string, string>();
    let names: string[];
    try {
      names = readdirSync(this.dir);
    } catch {
      return out;
    }
    if (names.length === 0) return out;
    for (const b of backends) {
      const m = this.get(b);
      if (m) out.set(b.id, `marked unhealthy since ${new Date(m.since).toISOString()}: ${m.reason}`);
    }
    return out;
  }

  /**
   * Looks again at a marked backend. Healthy again (mark cleared, returns undefined) when ComfyUI answers and
   * the prompt that was stuck is neither running nor pending any more; otherwise returns the mark.
   */
  async recheck(backend: Pick<Backend, 'id' | 'url'>, client: ComfyClient): Promise<UnhealthyMark | undefined> {
    const mark = this.get(backend);
    if (!mark) return undefined;
    try {
      const q = await client.getQueue({ timeoutMs: 5_000 });
      const stuck = mark.stuckPromptId;
      if (stuck !== undefined && (q.runningIds.includes(stuck) || q.pendingIds.includes(stuck))) return mark;
      const abandoned = mark.abandonedPromptId;
      if (abandoned !== undefined && (q.runningIds.includes(abandoned) || q.pendingIds.includes(abandoned))) {
        // Refusing connections did not mean a restart here (a proxy or tunnel in between went away): the
        // prompt survived, but its item has moved to another backend. Stop this copy so it renders once.
        await client.cancelJob(abandoned, { timeoutMs: 5_000 });
        this.logger?.warn({ backend: backend.id, promptId: abandoned }, 'backend was only out of reach: cancelled the prompt whose item moved elsewhere');
      }
      this.markHealthy(backend, stuck ? `prompt ${stuck} is no longer in ComfyUI's queue` : 'ComfyUI answers again');
      return undefined;
    } catch {
      return mark;
    }
  }

  /** Re-checks marked backends every `intervalMs` (worker side). Returns a stop function. */
  startProbing(backends: readonly Backend[], clientFor: (b: Backend) => ComfyClient | undefined, intervalMs: number): () => void {
    let running = false;
    const timer = setInterval(() => {
      if (running) return;
      running = true;
      void (async () => {
        for (const b of backends) {
          const client = clientFor(b);
          if (client && this.get(b)) await this.recheck(b, client);
        }
      })().finally(() => {
        running = false;
      });
    }, intervalMs);
    timer.unref();
    return () => clearInterval(timer);
  }
}
