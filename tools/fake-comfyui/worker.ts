/**
 * `main.prompt_worker`: takes the lowest-numbered item, executes it, writes history (which broadcasts
 * `status`), then sends `executing {node: null}`; applies `/free` flags between prompts or when idle.
 */
import type { Logger } from 'pino';
import type { Executor, FakeStats } from './executor.ts';
import type { Faults } from './faults.ts';
import type { PromptQueue } from './queue.ts';
import { Aborted } from './run-control.ts';
import type { RunControl } from './run-control.ts';
import type { WsHub } from './ws-hub.ts';

export interface WorkerDeps {
  queue: PromptQueue;
  executor: Executor;
  hub: WsHub;
  faults: Faults;
  stats: FakeStats;
  log: Logger;
}

export class Worker {
  alive = true;
  private stopped: Promise<void>;

  constructor(
    private readonly deps: WorkerDeps,
    readonly control: RunControl,
  ) {
    this.stopped = this.loop();
  }

  /** Resolves when the loop has ended (after `control.abort()`, or the worker "died"). */
  done(): Promise<void> {
    return this.stopped;
  }

  private async loop(): Promise<void> {
    const { queue, executor, hub, faults, stats, log } = this.deps;
    const control = this.control;
    try {
      while (!control.aborted) {
        await Promise.race([queue.waitForWork(), control.whenAborted]);
        if (control.aborted) return;
        const taken = queue.take();
        if (taken) {
          const [item, itemId] = taken;
          if (faults.state.workerDead) {
            // The thread dies with the item in queue_running; nothing else will ever run.
            log.error({ promptId: item.promptId }, 'fault: worker thread died');
            this.alive = false;
            return;
          }
          stats.executions[item.promptId] = (stats.executions[item.promptId] ?? 0) + 1;
          const run = { promptId: item.promptId, startedAt: Date.now(), endedAt: null as number | null };
          stats.runs.push(run);
          const outcome = await executor.execute(item, control);
          if (control.aborted) return;
          run.endedAt = Date.now();
          const last = outcome.messages.at(-1)?.[0];
          const ended = outcome.success ? 'success' : last === 'execution_interrupted' ? 'interrupted' : 'error';
          (stats.outcomes[item.promptId] ??= []).push(ended);
          queue.taskDone(itemId, outcome.result, {
            status_str: outcome.success ? 'success' : 'error',
            completed: outcome.success,
            messages: outcome.messages,
          });
          if (hub.clientId !== null) hub.send('executing', { node: null, prompt_id: item.promptId }, hub.clientId);
        }
        const flags = queue.takeFlags();
        if (flags.unload_models) stats.loadedModels.length = 0;
        if (flags.free_memory) {
          executor.reset();
          stats.freeMemory++;
        }
        await new Promise((r) => setImmediate(r));
      }
    } catch (err) {
      if (err instanceof Aborted) return;
      this.alive = false;
      log.error({ err }, 'worker crashed');
    }
  }
}
