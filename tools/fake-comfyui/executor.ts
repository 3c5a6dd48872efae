/**
 * The fake's `PromptExecutor.execute_async`: ComfyUI's event sequence for one prompt, recorded from the real
 * server. `execution_start`, `execution_cached`, then per staged node (ExecutionList order):
 * `progress_state` (running) → `executing` → interrupt check → the node → `executed` (nodes with ui) →
 * `progress_state` (finished). A cached output node only re-sends `executed` and `progress_state`. The end is
 * `execution_success`, or `execution_interrupted` (broadcast; the node that was about to run, with the nodes
 * that did run in `executed`) or `execution_error` (traceback frames, `current_inputs`, `current_outputs` =
 * every node of the prompt, a message ending in a newline).
 */
import type { Logger } from 'pino';
import type { CacheEntry } from './cache.ts';
import { fileIsChanged, signatures } from './cache.ts';
import { ExecutionList, isLink } from './execution-list.ts';
import type { DataDirs } from './files.ts';
import type { Faults } from './faults.ts';
import { SAMPLER_CLASSES } from './faults.ts';
import type { RawNodeInfo, RawObjectInfo } from './node-schema.ts';
import { declaredSpec, finalizedInputs, isObject, isOutputNode, specOptions } from './node-schema.ts';
import type { FakeValue, NodeResult, NodeRunCtx } from './nodes.ts';
import { describeValue, lazyInputsNeeded, NodeException, oomException, runFakeNode } from './nodes.ts';
import { previewJpegs, previewsRequested } from './preview.ts';
import { ProgressRegistry, SamplerProgress } from './progress.ts';
import type { HistoryItem, QueueItem, StatusMessage } from './queue.ts';
import { Aborted, Interrupted } from './run-control.ts';
import type { RunControl } from './run-control.ts';
import type { WsHub } from './ws-hub.ts';
import './save-nodes.ts';
import './video.ts';
import './control-nodes.ts';

export { Aborted, RunControl } from './run-control.ts';

export interface ExecutorDeps {
  hub: WsHub;
  dirs: DataDirs;
  faults: Faults;
  objectInfo: () => RawObjectInfo;
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
  /** `POST /free` calls asking to unload the models (the VRAM given back when the GPU changes hands). */
  unloadModelsRequests: number;
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
  /**
   * Model files loaders have loaded and no `/free` with `unload_models` has unloaded since (what ComfyUI would
   * hold in VRAM): GPU-sharing tests check it is empty before another group gets the GPU.
   */
  loadedModels: string[];
  /** Loads the `modelLoad` fault charged: when, cold (nothing was loaded) or a swap, and the files loaded. */
  modelLoads: Array<{ at: number; cold: boolean; files: string[] }>;
}

/** The model files a prompt's loader nodes name. */
function promptModelFiles(prompt: Record<string, unknown>): string[] {
  const files = new Set<string>();
  for (const node of Object.values(prompt) as Node[]) {
    if (!node.class_type.includes('Loader')) continue;
    for (const v of Object.values(node.inputs ?? {})) if (typeof v === 'string' && MODEL_FILE.test(v)) files.add(v);
  }
  return [...files];
}

const MODEL_FILE = /\.(safetensors|sft|gguf|ckpt|pt|pth|bin)$/i;

/** A loader node's model files (its string inputs naming a weights file) are in VRAM from now on. */
function noteLoadedModels(stats: FakeStats, node: Node): void {
  if (!node.class_type.includes('Loader')) return;
  for (const v of Object.values(node.inputs ?? {})) {
    if (typeof v === 'string' && MODEL_FILE.test(v) && !stats.loadedModels.includes(v)) stats.loadedModels.push(v);
  }
}

export function emptyStats(): FakeStats {
  return {
    executions: {},
    submissions: {},
    nodesExecuted: {},
    filesWritten: [],
    interrupts: 0,
    freeMemory: 0,
    unloadModelsRequests: 0,
    outcomes: {},
    runs: [],
    loadedModels: [],
    modelLoads: [],
  };
}

export interface RunOutcome {
  success: boolean;
  messages: StatusMessage[];
  result: Pick<HistoryItem, 'outputs' | 'meta'>;
}

type Node = { class_type: string; inputs: Record<string, unknown> };
type Failure = { interrupted: true; nodeId: string } | { interrupted: false; nodeId: string; error: NodeException; currentInputs: Record<string, unknown[]> };

const EXECUTOR_FRAMES = [
  '  File "/opt/ComfyUI/execution.py", line 545, in execute\n',
  '  File "/opt/ComfyUI/execution.py", line 344, in get_output_data\n',
  '  File "/opt/ComfyUI/execution.py", line 318, in _async_map_node_over_list\n',
  '  File "/opt/ComfyUI/execution.py", line 306, in process_inputs\n',
];

/** State of one prompt run. */
interface Run {
  item: QueueItem;
  control: RunControl;
  sid: string | null;
  progress: ProgressRegistry;
  sigs: Map<string, string>;
  values: Map<string, FakeValue[]>;
  executed: string[];
  ui: Record<string, Record<string, unknown>>;
  info: RawObjectInfo;
  extraData: Record<string, unknown>;
  firstExecuted: boolean;
  firstSampler: boolean;
  /** Lazy inputs already requested, per node. */
  askedLazy: Set<string>;
}

export class Executor {
  private cache = new Map<string, CacheEntry>();

  constructor(private readonly deps: ExecutorDeps) {}

  /** The `modelLoad` fault: load the prompt's model files not in VRAM, at a cold or a swap's cost. */
  private async loadModels(prompt: Record<string, unknown>, control: RunControl): Promise<void> {
    const cost = this.deps.faults.state.modelLoad;
    if (!cost) return;
    const { stats } = this.deps;
    const files = promptModelFiles(prompt);
    const missing = files.filter((f) => !stats.loadedModels.includes(f));
    if (missing.length === 0) return;
    const cold = stats.loadedModels.length === 0;
    stats.modelLoads.push({ at: Date.now(), cold, files: missing });
    stats.loadedModels.splice(0, stats.loadedModels.length, ...files);
    await control.sleep(cold ? cost.coldMs : cost.warmMs);
  }

  /** `PromptExecutor.reset()`: drops every cached output (`/free {"free_memory": true}`). */
  reset(): void {
    this.cache.clear();
  }

  // eslint-disable-next-line max-lines-per-function -- one prompt executed node by node with ComfyUI's events in its order (held to the recordings)
  async execute(item: QueueItem, control: RunControl): Promise<RunOutcome> {
    const { hub } = this.deps;
    const { promptId, prompt } = item;
    const extraData = { ...item.extraData, ...item.sensitive };
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
    const sigs = signatures(prompt, (node) => fileIsChanged(this.deps.dirs, node));
    const cached = (id: string) => this.cache.has(sigs.get(id) as string);
    addMessage('execution_cached', { nodes: Object.keys(prompt).filter(cached), prompt_id: promptId }, false);

    await this.loadModels(prompt, control);
    const info = this.deps.objectInfo();
    const run: Run = {
      item,
      control,
      sid,
      progress: new ProgressRegistry(hub, promptId, sid),
      sigs,
      values: new Map(),
      executed: [],
      ui: {},
      info,
      extraData,
      firstExecuted: true,
      firstSampler: true,
      askedLazy: new Set(),
    };
    const nodeOf = (id: string) => prompt[id] as Node;
    const list = new ExecutionList({
      inputs: (id) => nodeOf(id).inputs,
      isCached: cached,
      isOutput: (id) => isOutputNode(info[nodeOf(id).class_type] ?? {}),
      isLazy: (id, input) => {
        const spec = declaredSpec(info[nodeOf(id).class_type] ?? {}, input);
        return spec !== undefined && specOptions(spec).lazy === true;
      },
    });
    for (const o of item.outputs) list.addNode(o);

    let failure: Failure | undefined;
    while (!list.isEmpty()) {
      const id = list.stage();
      if (id === undefined) {
        failure = {
          interrupted: false,
          nodeId: Object.keys(prompt)[0] ?? '',
          error: new NodeException('graph.DependencyCycleError', 'Dependency cycle detected'),
          currentInputs: {},
        };
        break;
      }
      const outcome = await this.runNode(run, id, list);
      if (outcome === 'pending') {
        list.unstage();
        continue;
      }
      failure = outcome;
      if (failure) break;
      list.complete();
    }

    if (!failure) {
      // Intermediate-output nodes served from the cache still report their ui.
      for (const id of Object.keys(prompt)) {
        if (run.executed.includes(id) || info[nodeOf(id).class_type]?.has_intermediate_output !== true) continue;
        const entry = this.cache.get(sigs.get(id) as string);
        if (entry) this.sendCachedUi(run, id, entry);
      }
      addMessage('execution_success', { prompt_id: promptId }, false);
    } else if (failure.interrupted) {
      this.deps.log.info({ promptId }, 'Processing interrupted');
      addMessage(
        'execution_interrupted',
        { prompt_id: promptId, node_id: failure.nodeId, node_type: nodeOf(failure.nodeId)?.class_type, executed: [...run.executed] },
        true,
      );
    } else {
      const ex = failure.error;
      this.deps.log.error({ promptId, node: failure.nodeId, err: ex.message }, '!!! Exception during processing !!!');
      addMessage(
        'execution_error',
        {
          prompt_id: promptId,
          node_id: failure.nodeId,
          node_type: nodeOf(failure.nodeId)?.class_type,
          executed: [...run.executed],
          exception_message: `${ex.message}\n${ex.tips}`,
          exception_type: ex.pyType,
          traceback:
            ex.pyType === 'graph.DependencyCycleError'
              ? []
              : [
                  ...EXECUTOR_FRAMES,
                  ...(ex.frames.length > 0 ? ex.frames : [`  File "/opt/ComfyUI/nodes.py", line 1, in ${nodeOf(failure.nodeId)?.class_type}\n`]),
                ],
          current_inputs: failure.currentInputs,
          current_outputs: Object.keys(prompt),
        },
        false,
      );
    }
    hub.lastNodeId = null;
    const outputs: HistoryItem['outputs'] = {};
    const meta: HistoryItem['meta'] = {};
    for (const [id, ui] of Object.entries(run.ui)) {
      outputs[id] = ui;
      meta[id] = { node_id: id, display_node: id, parent_node: null, real_node_id: id };
    }
    return { success: !failure, messages, result: { outputs, meta } };
  }

  private sendCachedUi(run: Run, id: string, entry: CacheEntry): void {
    if (entry.ui) run.ui[id] = entry.ui;
    if (run.sid !== null) this.deps.hub.send('executed', { node: id, display_node: id, output: entry.ui ?? null, prompt_id: run.item.promptId }, run.sid);
  }

  /** `execution.execute` for one staged node; a failure ends the prompt. */
  private async runNode(run: Run, id: string, list: ExecutionList): Promise<Failure | 'pending' | undefined> {
    const { hub, faults, stats, log } = this.deps;
    const { control, item, progress, sid } = run;
    const promptId = item.promptId;
    const node = item.prompt[id] as Node;
    const classType = node.class_type;
    const sig = run.sigs.get(id) as string;
    const hit = this.cache.get(sig);
    if (hit) {
      this.sendCachedUi(run, id, hit);
      progress.finish(id);
      return undefined;
    }

    const nodeInfo: RawNodeInfo = run.info[classType] ?? {};
    const outputsOf = (src: string): FakeValue[] | undefined => run.values.get(src) ?? this.cache.get(run.sigs.get(src) as string)?.outputs;
    progress.start(id);
    if (sid !== null) {
      hub.lastNodeId = id;
      hub.send('executing', { node: id, display_node: id, prompt_id: promptId }, sid);
    }
    try {
      control.check();
      noteLoadedModels(stats, node);
      const ctx = this.nodeCtx(run, id, node, nodeInfo, sig, outputsOf);
      // An input asked for before and still missing (an out-of-range slot) is not asked for again.
      const needed = lazyInputsNeeded(ctx).filter((input) => !run.askedLazy.has(`${id}\0${input}`));
      if (needed.length > 0) {
        for (const input of needed) {
          run.askedLazy.add(`${id}\0${input}`);
          list.linkInput(id, input);
        }
        return 'pending';
      }
      const isFirst = run.firstExecuted;
      run.firstExecuted = false;
      if (faults.takeHold(promptId, id, classType)) {
        log.warn({ promptId, node: id }, 'fault: node held until interrupt or release');
        await control.hold();
      }
      const hang = faults.takeHang(classType, isFirst);
      if (hang) {
        log.warn({ promptId, node: id, classType }, 'fault: node hangs');
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
      const errFault = faults.takeExecutionError(classType, isSampler && run.firstSampler);
      if (isSampler) run.firstSampler = false;
      if (errFault) {
        if (errFault.type === 'oom') throw oomException(errFault.message);
        throw new NodeException('RuntimeError', errFault.message ?? `fake-comfyui injected exception in ${classType}`);
      }
      const result: NodeResult = await runFakeNode(ctx);
      run.values.set(id, result.outputs);
      this.cache.set(sig, result.ui ? { outputs: result.outputs, ui: result.ui } : { outputs: result.outputs });
      stats.nodesExecuted[promptId] = (stats.nodesExecuted[promptId] ?? 0) + 1;
      if (result.ui) {
        run.ui[id] = result.ui;
        for (const f of (result.ui.images as Array<{ filename: string; subfolder: string; type: string }> | undefined) ?? []) {
          stats.filesWritten.push([f.type, f.subfolder, f.filename].filter(Boolean).join('/'));
        }
        if (sid !== null) hub.send('executed', { node: id, display_node: id, output: result.ui, prompt_id: promptId }, sid);
      }
      progress.finish(id);
      run.executed.push(id);
      return undefined;
    } catch (err) {
      if (err instanceof Aborted) throw err;
      if (err instanceof Interrupted) return { interrupted: true, nodeId: id };
      const ex =
        err instanceof NodeException ? err : new NodeException(err instanceof Error ? err.name : 'Exception', String(err instanceof Error ? err.message : err));
      return { interrupted: false, nodeId: id, error: ex, currentInputs: currentInputs(node, nodeInfo, outputsOf, run) };
    }
  }

  private nodeCtx(run: Run, id: string, node: Node, info: RawNodeInfo, sig: string, outputsOf: (src: string) => FakeValue[] | undefined): NodeRunCtx {
    const { control, item, progress } = run;
    const stepMs = this.deps.faults.stepMs(this.deps.stepMs);
    const previews = previewsRequested(run.extraData.preview_method);
    return {
      id,
      classType: node.class_type,
      info,
      promptId: item.promptId,
      prompt: item.prompt,
      extraData: run.extraData,
      dirs: this.deps.dirs,
      literal: (name) => {
        const v = node.inputs[name];
        if (isLink(v)) {
          const src = outputsOf(v[0])?.[v[1]];
          return src?.kind === 'opaque' ? src.value : undefined;
        }
        if (Array.isArray(v)) return undefined;
        if (isObject(v) && '__value__' in v) return v.__value__;
        return v;
      },
      linked: (name) => isLink(node.inputs[name]),
      value: (name) => {
        const v = node.inputs[name];
        if (!isLink(v)) return undefined;
        const outs = outputsOf(v[0]);
        return outs?.[v[1] < 0 ? outs.length + v[1] : v[1]];
      },
      outSig: (i) => `${sig}:${i}`,
      sample: async (steps, latent) => {
        const frames = previews && latent ? await previewJpegs(`${latent.sig}:${sig}`, latent.width, latent.height, steps) : undefined;
        const bar = new SamplerProgress(progress, this.deps.hub, control, id, steps, (step) => frames?.[step - 1]);
        for (let i = 1; i <= steps; i++) {
          await control.sleep(stepMs);
          bar.step(i);
        }
      },
    };
  }
}

/** `execution_error.current_inputs`: every input as a one-element list of `format_value`, links included. */
function currentInputs(node: Node, info: RawNodeInfo, outputsOf: (src: string) => FakeValue[] | undefined, run: Run): Record<string, unknown[]> {
  const out: Record<string, unknown[]> = {};
  const declared = finalizedInputs(info, node.inputs).inputs;
  for (const [k, v] of Object.entries(node.inputs)) {
    if (isLink(v)) {
      const val = outputsOf(v[0])?.[v[1]];
      out[k] = [val ? describeValue(val) : null];
    } else if (declared.has(k)) {
      out[k] = [v === null || ['string', 'number', 'boolean'].includes(typeof v) ? v : JSON.stringify(v)];
    }
  }
  const hidden = info.input?.hidden;
  if (isObject(hidden)) {
    for (const [k, kind] of Object.entries(hidden)) {
      if (kind === 'PROMPT') out[k] = [JSON.stringify(run.item.prompt)];
      else if (kind === 'EXTRA_PNGINFO') out[k] = [run.extraData.extra_pnginfo === undefined ? null : JSON.stringify(run.extraData.extra_pnginfo)];
      else if (kind === 'UNIQUE_ID') out[k] = [node === undefined ? null : (Object.keys(run.item.prompt).find((id) => run.item.prompt[id] === node) ?? null)];
    }
  }
  return out;
}
