/**
 * The worker thread and `PromptExecutor` of the fake: one prompt at a time in heap order, ComfyUI's event
 * sequence and addressing, its output cache keyed by node signature, interrupts checked where ComfyUI
 * checks them (before each node and on each progress tick), and the injected faults.
 */
import { createHash, randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import type { Logger } from 'pino';
import type { NodeInfo, ObjectInfo } from '../comfyui/object-info.ts';
import type { DataDirs } from './files.ts';
import { resolveAnnotated } from './files.ts';
import type { Faults } from './faults.ts';
import { SAMPLER_CLASSES } from './faults.ts';
import type { FakeValue, NodeResult, NodeRunCtx } from './nodes.ts';
import { describeValue, NodeException, oomException, runFakeNode } from './nodes.ts';
import type { ExecutionErrorData, Graph, HistoryItem, PromptQueue, QueueItem, StatusMessage } from './queue.ts';
import type { WsHub } from './ws-hub.ts';

/** Raised at a check point when the server is being reset or closed: the run ends without a trace. */
export class Aborted extends Error {}
/** `comfy.model_management.InterruptProcessingException`. */
class Interrupted extends Error {}

/**
 * Interrupt and abort signalling for the running prompt. `interrupt()` is ComfyUI's global flag; `abort()`
 * ends everything (reset/close) and wakes any sleep or hang.
 */
export class RunControl {
  aborted = false;
  interruptRequested = false;
  private interruptWaiters = new Set<() => void>();
  private abortWaiters = new Set<() => void>();
  private resolveAborted: () => void = () => {};
  /** Settles once, when `abort()` is called. */
  readonly whenAborted: Promise<void> = new Promise((resolve) => {
    this.resolveAborted = resolve;
  });

  interrupt(): void {
    this.interruptRequested = true;
    for (const w of this.interruptWaiters) w();
    this.interruptWaiters.clear();
  }

  check(): void {
    if (this.aborted) throw new Aborted('aborted');
    if (this.interruptRequested) throw new Interrupted('interrupted');
  }

  abort(): void {
    this.aborted = true;
    this.resolveAborted();
    for (const w of this.abortWaiters) w();
    this.abortWaiters.clear();
  }

  /** Waits `ms` (or one event-loop turn for 0, so HTTP requests such as interrupts get through). */
  sleep(ms: number): Promise<void> {
    if (this.aborted) return Promise.reject(new Aborted('aborted'));
    return new Promise((resolve, reject) => {
      const onAbort = () => {
        clearTimeout(t);
        reject(new Aborted('aborted'));
      };
      const done = () => {
        this.abortWaiters.delete(onAbort);
        resolve();
      };
      const t = ms > 0 ? setTimeout(done, ms) : undefined;
      if (t === undefined) setImmediate(done);
      this.abortWaiters.add(onAbort);
    });
  }

  /** A hung node: returns when interrupted (never, with `ignoreInterrupt`); rejects on abort. */
  hang(ignoreInterrupt: boolean): Promise<void> {
    if (this.aborted) return Promise.reject(new Aborted('aborted'));
    return new Promise((resolve, reject) => {
      const onAbort = () => {
        this.interruptWaiters.delete(onInterrupt);
        reject(new Aborted('aborted'));
      };
      const onInterrupt = () => {
        this.abortWaiters.delete(onAbort);
        resolve();
      };
      this.abortWaiters.add(onAbort);
      if (!ignoreInterrupt) {
        if (this.interruptRequested) onInterrupt();
        else this.interruptWaiters.add(onInterrupt);
      }
    });
  }
}

interface CacheEntry {
  outputs: FakeValue[];
  ui?: Record<string, unknown>;
}

export interface ExecutorDeps {
  hub: WsHub;
  dirs: DataDirs;
  faults: Faults;
  objectInfo: () => ObjectInfo;
  stepMs: number;
  renderMs: number;
  log: Logger;
  stats: FakeStats;
}

export interface FakeStats {
  /** How many times the worker started executing each prompt id (a cached run counts). */
  executions: Record<string, number>;
  /** Accepted `POST /prompt` submissions per prompt id (duplicates count). */
  submissions: Record<string, number>;
  /** Nodes actually executed (not served from cache) per prompt id, summed over runs. */
  nodesExecuted: Record<string, number>;
  /** Files written by save/preview nodes, as `type/subfolder/filename`. */
  filesWritten: string[];
  interrupts: number;
  freeMemory: number;
  /**
   * How each run of a prompt ended, in order (`success`, `error`, `interrupted`): fault tests prove that a
   * render's item succeeded exactly once. A run abandoned by a reset or a dead worker has no entry.
   */
  outcomes: Record<string, Array<'success' | 'error' | 'interrupted'>>;
  /**
   * Every run in start order with wall-clock times (ms since the epoch; null while running or when abandoned):
   * the cluster test checks from these that no GPU sat idle while renders waited, across several fakes.
   */
  runs: Array<{ promptId: string; startedAt: number; endedAt: number | null }>;
}

export function emptyStats(): FakeStats {
  return { executions: {}, submissions: {}, nodesExecuted: {}, filesWritten: [], interrupts: 0, freeMemory: 0, outcomes: {}, runs: [] };
}

interface RunOutcome {
  success: boolean;
  messages: StatusMessage[];
  result: Pick<HistoryItem, 'outputs' | 'meta'>;
}

export class Executor {
  private cache = new Map<string, CacheEntry>();

  constructor(private readonly deps: ExecutorDeps) {}

  /** `PromptExecutor.reset()`: drops every cached output (`/free {"free_memory": true}`). */
  reset(): void {
    this.cache.clear();
  }

  async execute(item: QueueItem, control: RunControl): Promise<RunOutcome> {
    const { hub, faults, stats } = this.deps;
    const { promptId, prompt } = item;
    const extraData = { ...item.extraData, ...item.sensitive };
    const info = this.deps.objectInfo();
    control.interruptRequested = false;
    hub.clientId = 'client_id' in extraData ? ((extraData.client_id as string | null) ?? null) : null;
    const sid = hub.clientId;

    const messages: StatusMessage[] = [];
    const addMessage = (event: string, data: Record<string, unknown>, broadcast: boolean) => {
      const withTs = { ...data, timestamp: Date.now() };
      messages.push([event, withTs]);
      if (sid !== null || broadcast) hub.send(event, withTs, sid);
    };

    addMessage('execution_start', { prompt_id: promptId }, false);

    const sigs = signatures(prompt, (id, node) => this.isChanged(node));
    const isCached = (id: string) => this.cache.has(sigs.get(id) as string);
    const cachedNodes = Object.keys(prompt).filter(isCached);
    addMessage('execution_cached', { nodes: cachedNodes, prompt_id: promptId }, false);

    const order = stageOrder(prompt, item.outputs, isCached);
    const values = new Map<string, FakeValue[]>();
    const executed: string[] = [];
    const uiOutputs: HistoryItem['outputs'] = {};
    const meta: HistoryItem['meta'] = {};
    const progress = new Map<string, { value: number; max: number; state: 'running' | 'finished' | 'error' }>();
    const sendProgressState = () => {
      const nodes: Record<string, unknown> = {};
      for (const [id, p] of progress) {
        nodes[id] = { ...p, node_id: id, prompt_id: promptId, display_node_id: id, parent_node_id: null, real_node_id: id };
      }
      hub.send('progress_state', { prompt_id: promptId, nodes }, sid);
    };
    const outputsOf = (id: string): FakeValue[] | undefined => values.get(id) ?? this.cache.get(sigs.get(id) as string)?.outputs;

    let success = true;
    let firstExecuted = true;
    let firstSampler = true;
    let currentNode: string | undefined;
    let currentInputs: Record<string, unknown[]> = {};
    try {
      for (const id of order) {
        const node = prompt[id] as { class_type: string; inputs: Record<string, unknown> };
        const classType = node.class_type;
        const sig = sigs.get(id) as string;
        const cached = this.cache.get(sig);
        if (cached) {
          if (cached.ui) {
            if (sid !== null) hub.send('executed', { node: id, display_node: id, output: cached.ui, prompt_id: promptId }, sid);
            uiOutputs[id] = cached.ui;
            meta[id] = { node_id: id, display_node: id, parent_node: null, real_node_id: id };
          }
          progress.set(id, { value: 1, max: 1, state: 'finished' });
          sendProgressState();
          continue;
        }

        currentNode = id;
        const nodeInfo = info[classType] as NodeInfo;
        currentInputs = formatInputs(node.inputs, outputsOf);
        if (sid !== null) {
          hub.lastNodeId = id;
          hub.send('executing', { node: id, display_node: id, prompt_id: promptId }, sid);
        }
        progress.set(id, { value: 0, max: 1, state: 'running' });
        sendProgressState();
        control.check();

        const isFirst = firstExecuted;
        firstExecuted = false;
        const hang = faults.takeHang(classType, isFirst);
        if (hang) {
          this.deps.log.warn({ promptId, node: id, classType }, 'fault: node hangs');
          await control.hang(hang.ignoreInterrupt);
          control.check();
        }
        const renderMs = faults.renderMs(this.deps.renderMs);
        // Render time is spent up front like a model load: not interruptible until the next check.
        if (isFirst && renderMs > 0) {
          await control.sleep(renderMs);
          control.check();
        }
        const isSampler = SAMPLER_CLASSES.has(classType);
        const errFault = faults.takeExecutionError(classType, isSampler && firstSampler);
        if (isSampler) firstSampler = false;
        if (errFault) {
          if (errFault.type === 'oom') throw oomException(errFault.message);
          throw new NodeException('RuntimeError', errFault.message ?? `fake-comfyui injected exception in ${classType}`);
        }

        const stepMs = faults.stepMs(this.deps.stepMs);
        const ctx: NodeRunCtx = {
          id,
          classType,
          info: nodeInfo,
          promptId,
          prompt,
          extraData,
          dirs: this.deps.dirs,
          literal: (name) => {
            const v = node.inputs[name];
            if (Array.isArray(v)) return undefined;
            if (v && typeof v === 'object' && '__value__' in v) return (v as { __value__: unknown }).__value__;
            return v;
          },
          value: (name) => {
            const v = node.inputs[name];
            if (!Array.isArray(v) || typeof v[0] !== 'string' || typeof v[1] !== 'number') return undefined;
            const outs = outputsOf(v[0]);
            return outs?.[v[1] < 0 ? outs.length + v[1] : v[1]];
          },
          outSig: (i) => `${sig}:${i}`,
          sample: async (steps) => {
            for (let i = 1; i <= steps; i++) {
              await control.sleep(stepMs);
              control.check();
              progress.set(id, { value: i, max: steps, state: 'running' });
              sendProgressState();
              hub.send('progress', { value: i, max: steps, prompt_id: promptId, node: id }, sid);
            }
          },
        };
        const result: NodeResult = await runFakeNode(ctx);
        control.check();
        values.set(id, result.outputs);
        this.cache.set(sig, result.ui ? { outputs: result.outputs, ui: result.ui } : { outputs: result.outputs });
        stats.nodesExecuted[promptId] = (stats.nodesExecuted[promptId] ?? 0) + 1;
        if (result.ui) {
          uiOutputs[id] = result.ui;
          meta[id] = { node_id: id, display_node: id, parent_node: null, real_node_id: id };
          for (const f of (result.ui.images as Array<{ filename: string; subfolder: string; type: string }> | undefined) ?? []) {
            stats.filesWritten.push([f.type, f.subfolder, f.filename].filter(Boolean).join('/'));
          }
          if (sid !== null) hub.send('executed', { node: id, display_node: id, output: result.ui, prompt_id: promptId }, sid);
        }
        progress.set(id, { value: 1, max: 1, state: 'finished' });
        sendProgressState();
        executed.push(id);
        currentNode = undefined;
      }
      addMessage('execution_success', { prompt_id: promptId }, false);
    } catch (err) {
      if (err instanceof Aborted) throw err;
      success = false;
      const nodeId = currentNode ?? order[0] ?? '';
      const nodeType = String((prompt[nodeId] as { class_type?: unknown } | undefined)?.class_type ?? '');
      if (err instanceof Interrupted) {
        this.deps.log.info({ promptId }, 'Processing interrupted');
        addMessage('execution_interrupted', { prompt_id: promptId, node_id: nodeId, node_type: nodeType, executed: [...executed] }, true);
      } else {
        const ex = err instanceof NodeException ? err : new NodeException(err instanceof Error ? err.name : 'Exception', String(err instanceof Error ? err.message : err));
        this.deps.log.error({ promptId, node: nodeId, err: ex.message }, '!!! Exception during processing !!!');
        const data: Omit<ExecutionErrorData, 'timestamp'> = {
          prompt_id: promptId,
          node_id: nodeId,
          node_type: nodeType,
          executed: [...executed],
          exception_message: ex.message,
          exception_type: ex.pyType,
          traceback: [
            '  File "/ComfyUI/execution.py", line 510, in execute\n    output_data, output_ui, has_subgraph, has_pending_tasks = await get_output_data(prompt_id, unique_id, obj, input_data_all, execution_block_cb=execution_block_cb, pre_execute_cb=pre_execute_cb, v3_data=v3_data)\n',
            `  File "/ComfyUI/nodes.py", line 1, in ${nodeType}\n    (fake-comfyui)\n`,
          ],
          current_inputs: currentInputs,
          current_outputs: cachedNodes,
        };
        addMessage('execution_error', data as unknown as Record<string, unknown>, false);
      }
      if (currentNode) {
        progress.set(currentNode, { value: 0, max: 1, state: 'error' });
      }
    }
    hub.lastNodeId = null;
    return { success, messages, result: { outputs: uiOutputs, meta } };
  }

  /** `IS_CHANGED`: LoadImage/LoadImageMask hash the file; a missing file never matches the cache. */
  private isChanged(node: { class_type?: unknown; inputs?: unknown }): string {
    if (node.class_type !== 'LoadImage' && node.class_type !== 'LoadImageMask') return '';
    const ref = (node.inputs as Record<string, unknown> | undefined)?.image;
    const full = typeof ref === 'string' ? resolveAnnotated(this.deps.dirs, ref) : undefined;
    try {
      if (!full) throw new Error('missing');
      return createHash('sha256').update(readFileSync(full)).digest('hex');
    } catch {
      return `nan:${randomUUID()}`;
    }
  }
}

/**
 * Node signatures like ComfyUI's cache keys: class_type, IS_CHANGED, literal inputs and, for links, the
 * source's signature and slot. Node ids are not part of it, so identical subgraphs share cache entries.
 */
export function signatures(prompt: Graph, isChanged: (id: string, node: { class_type?: unknown; inputs?: unknown }) => string): Map<string, string> {
  const memo = new Map<string, string>();
  const visiting = new Set<string>();
  const sig = (id: string): string => {
    const done = memo.get(id);
    if (done) return done;
    if (visiting.has(id)) return `cycle:${id}`;
    visiting.add(id);
    const node = (prompt[id] ?? {}) as { class_type?: unknown; inputs?: unknown };
    const inputs = node.inputs && typeof node.inputs === 'object' ? (node.inputs as Record<string, unknown>) : {};
    const parts = Object.keys(inputs)
      .sort()
      .map((k) => {
        const v = inputs[k];
        if (Array.isArray(v) && v.length === 2 && typeof v[0] === 'string' && Object.hasOwn(prompt, v[0])) return [k, 'link', sig(v[0]), v[1]];
        return [k, 'value', v];
      });
    const s = createHash('sha256').update(JSON.stringify([node.class_type, isChanged(id, node), parts])).digest('hex');
    visiting.delete(id);
    memo.set(id, s);
    return s;
  };
  for (const id of Object.keys(prompt)) sig(id);
  return memo;
}

/**
 * The nodes to stage, dependencies first: every output node (cached ones too, so their cached ui is
 * reported) and every uncached node they need. Cached upstream nodes are not staged, as in ComfyUI.
 */
function stageOrder(prompt: Graph, outputs: string[], isCached: (id: string) => boolean): string[] {
  const order: string[] = [];
  const seen = new Set<string>();
  const visit = (id: string) => {
    if (seen.has(id)) return;
    seen.add(id);
    if (!isCached(id)) {
      const inputs = ((prompt[id] as { inputs?: Record<string, unknown> }).inputs ?? {}) as Record<string, unknown>;
      for (const v of Object.values(inputs)) {
        if (Array.isArray(v) && typeof v[0] === 'string' && Object.hasOwn(prompt, v[0]) && !isCached(v[0])) visit(v[0]);
      }
    }
    order.push(id);
  };
  for (const o of outputs) visit(o);
  return order;
}

function formatInputs(inputs: Record<string, unknown>, outputsOf: (id: string) => FakeValue[] | undefined): Record<string, unknown[]> {
  const out: Record<string, unknown[]> = {};
  for (const [k, v] of Object.entries(inputs)) {
    if (Array.isArray(v) && typeof v[0] === 'string' && typeof v[1] === 'number') {
      const val = outputsOf(v[0])?.[v[1]];
      out[k] = [val ? describeValue(val) : null];
    } else if (v === null || ['string', 'number', 'boolean'].includes(typeof v)) out[k] = [v];
    else out[k] = [JSON.stringify(v)];
  }
  return out;
}

export interface WorkerDeps {
  queue: PromptQueue;
  executor: Executor;
  hub: WsHub;
  faults: Faults;
  stats: FakeStats;
  log: Logger;
}

/**
 * `main.prompt_worker`: takes the lowest-numbered item, executes it, writes history (which broadcasts
 * `status`), then sends `executing {node: null}`; applies `/free` flags between prompts or when idle.
 */
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
