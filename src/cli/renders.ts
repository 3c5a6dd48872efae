/**
 * `comfy-durable renders <list|show|outputs|replay|cancel>`: the operator CLI. Talks to Temporal
 * (TEMPORAL_ADDRESS, default 127.0.0.1:7233; TEMPORAL_NAMESPACE) and, for outputs, the blob store under
 * DATA_DIR. The logic lives in src/operators, shared with the HTTP routes; this file parses arguments and
 * prints. Results go to stdout (tables, or JSON with --json), problems to stderr.
 */
import { sanitizeForTerminal } from './sanitize.ts';
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { parseArgs, type ParseArgsConfig } from 'node:util';
import { blobStoreFromConfig } from '../blobs/from-config.ts';
import { ConfigError, loadConfig } from '../config/config.ts';
import type { ComfyGraph } from '../comfyui/graph.ts';
import { NotReplayableError, OutputNotFoundError, RenderNotFoundError, RenderNotRunningError, RenderOperators } from '../operators/operators.ts';
import { parseTimeSpec, renderFiltersSchema, type RenderFilters } from '../operators/query.ts';
import { pruneRenders, type PruneOptions } from '../retention/prune.ts';
import type { BulkReplayResult, RenderSummary, RenderTimeline } from '../operators/types.ts';
import { isImageRender, isImagesRender, type RenderRequest } from '../contracts/render.ts';
import { connectClient } from '../temporal/client.ts';
import { RenderService } from '../renders/render-service.ts';
import { createSubmitter } from '../renders/submit.ts';
import { loadModelOverrides } from '../models/registry.ts';
import { AdmissionRefusedError } from '../renders/admission.ts';
import { RequestError } from '../errors/request-error.ts';
import { EVERYONE, ownerViewer, type Viewer } from '../renders/owner.ts';

export const RENDERS_USAGE = `usage: comfy-durable renders <command>

  list    [--status running|completed|failed|cancelled|terminated|timed-out] [--model M] [--kind K]
          [--outcome completed|partial|interrupted|skipped|blank|failed|failed:<class>]
          [--since T] [--until T] [--replay-of ID] [--task-queue Q] [--owner NAME] [--limit N] [--json]
                                        OUTCOME says what happened: partial (interrupt, skip: the step
                                        reached), blank (an output of one colour; black = NaNs in the VAE)
  show    <id> [--owner NAME] [--json]  timeline: stages, attempts, errors, request, graphs, prompts, outputs
  outputs <id> --dir D [--owner NAME]   save the outputs as D/<id>-<n>.png (.mp4 for videos)
  replay  <id> [--new-seed] [--owner NAME] [--json]
                                        render the same resolved request again (same seed unless --new-seed)
  replay  --failed --since T [--until T] [--model M] [--owner NAME] [--dry-run] [--include-replayed] [--json]
                                        replay every failed render that started in the window
  cancel  <id> [--owner NAME]

  --owner NAME acts as the API key NAME would (API_KEYS): list only its renders; show, outputs, replay and
  cancel a render only when it is NAME's (else "not found", as that key would be told). Without it the CLI
  is an operator and sees every render; the OWNER column says whose each is.
  prune   --older-than D [--dry-run] [--json]
                                        retention now: delete renders that ended more than D ago (7d, 12h)
                                        and every blob no remaining render references; says what it freed

  T is an ISO date-time (2026-05-01T22:10:00Z) or relative to now: 30m, 2h, 1d.
  Connects to TEMPORAL_ADDRESS (default 127.0.0.1:7233), namespace TEMPORAL_NAMESPACE; outputs are read
  from the blob store under DATA_DIR.
`;

class UsageError extends Error {}

// Everything printed passes here: no terminal escape from a prompt or an error message reaches the terminal.
const out = (s: string): void => {
  process.stdout.write(sanitizeForTerminal(s.endsWith('\n') ? s : `${s}\n`));
};
const err = (s: string): void => {
  process.stderr.write(sanitizeForTerminal(s.endsWith('\n') ? s : `${s}\n`));
};

export async function runRenders(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  if (!command) {
    err(RENDERS_USAGE);
    return 2;
  }
  if (command === 'help' || command === '--help' || command === '-h') {
    out(RENDERS_USAGE);
    return 0;
  }
  let config;
  try {
    config = loadConfig();
    // Replays start like every render (renders/submit.ts): graphs built here, so with the models the service
    // runs (MODELS_CONFIG overrides included), and admitted against MAX_WAITING_RENDERS.
    if (config.MODELS_CONFIG) loadModelOverrides(config.MODELS_CONFIG);
  } catch (e) {
    if (e instanceof Error && !(e instanceof ConfigError) && config) {
      err(e.message);
      return 2;
    }
    if (e instanceof ConfigError) {
      err(e.message);
      return 2;
    }
    throw e;
  }
  const address = config.TEMPORAL_ADDRESS ?? '127.0.0.1:7233';
  let connected;
  try {
    connected = await connectClient(address, config.TEMPORAL_NAMESPACE);
  } catch (e) {
    err(`cannot reach Temporal at ${address} (set TEMPORAL_ADDRESS): ${(e as Error).message}`);
    return 1;
  }
  const { client, connection } = connected;
  const blobs = await blobStoreFromConfig(config);
  const submitter = createSubmitter({ renders: new RenderService(client, config.TEMPORAL_TASK_QUEUE), config, blobs });
  const ops = new RenderOperators({ client, namespace: config.TEMPORAL_NAMESPACE, blobs, submitter });
  try {
    switch (command) {
      case 'list':
        return await list(ops, rest);
      case 'show':
        return await show(ops, rest);
      case 'outputs':
        return await outputs(ops, rest);
      case 'replay':
        return await replay(ops, rest);
      case 'cancel':
        return await cancel(ops, rest);
      case 'prune':
        return await prune(rest, {
          client,
          namespace: config.TEMPORAL_NAMESPACE,
          blobs: await blobStoreFromConfig(config),
          comfyInputDir: config.COMFYUI_INPUT_DIR,
        });
      default:
        throw new UsageError(`unknown command ${JSON.stringify(command)}`);
    }
  } catch (e) {
    if (e instanceof UsageError) {
      err(`${e.message}\n\n${RENDERS_USAGE}`);
      return 2;
    }
    // A replay refused like any render (a full queue, a request no graph can be built for) is an answer, not a crash.
    const refused = e instanceof AdmissionRefusedError || e instanceof RequestError;
    if (
      refused ||
      e instanceof RenderNotFoundError ||
      e instanceof RenderNotRunningError ||
      e instanceof OutputNotFoundError ||
      e instanceof NotReplayableError
    ) {
      err(e.message);
      return 1;
    }
    throw e;
  } finally {
    await connection.close().catch(() => undefined);
  }
}

function args(rest: string[], options: ParseArgsConfig['options'], positionals = 0): { values: Record<string, string | boolean | undefined>; ids: string[] } {
  let parsed;
  try {
    parsed = parseArgs({ args: rest, options: options ?? {}, allowPositionals: positionals > 0, strict: true });
  } catch (e) {
    throw new UsageError((e as Error).message);
  }
  if (parsed.positionals.length > positionals) throw new UsageError(`unexpected argument ${parsed.positionals[positionals]}`);
  return { values: parsed.values as Record<string, string | boolean | undefined>, ids: parsed.positionals };
}

/** `--owner NAME`: act as that key would (its own renders only); without it, as an operator (every render). */
function viewerFrom(values: Record<string, string | boolean | undefined>): Viewer {
  const owner = values.owner;
  if (owner === undefined) return EVERYONE;
  if (typeof owner !== 'string' || !renderFiltersSchema.shape.owner.safeParse(owner).success) {
    throw new UsageError(`--owner: a key name is 1-64 letters, digits, . _ or -, got ${JSON.stringify(owner)}`);
  }
  return ownerViewer(owner);
}

function filtersFrom(values: Record<string, string | boolean | undefined>): RenderFilters {
  const raw = {
    status: values.status,
    outcome: values.outcome,
    model: values.model,
    kind: values.kind,
    since: values.since,
    until: values.until,
    replayOf: values['replay-of'],
    taskQueue: values['task-queue'],
    owner: values.owner,
  };
  const parsed = renderFiltersSchema.safeParse(Object.fromEntries(Object.entries(raw).filter(([, v]) => v !== undefined)));
  if (!parsed.success) {
    const i = parsed.error.issues[0];
    throw new UsageError(`--${String(i?.path[0] ?? '').replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)}: ${i?.message ?? 'invalid'}`);
  }
  return parsed.data;
}

async function list(ops: RenderOperators, rest: string[]): Promise<number> {
  const { values } = args(rest, {
    status: { type: 'string' },
    outcome: { type: 'string' },
    model: { type: 'string' },
    kind: { type: 'string' },
    since: { type: 'string' },
    until: { type: 'string' },
    'replay-of': { type: 'string' },
    'task-queue': { type: 'string' },
    owner: { type: 'string' },
    limit: { type: 'string' },
    json: { type: 'boolean' },
  });
  const limit = values.limit === undefined ? 100 : Number(values.limit);
  if (!Number.isInteger(limit) || limit < 1) throw new UsageError('--limit must be a positive integer');
  const renders = await ops.listAll(filtersFrom(values), { limit, withOutcome: true });
  if (values.json) out(JSON.stringify(renders, null, 2));
  else out(renders.length === 0 ? 'no renders match' : table(renders));
  return 0;
}

async function show(ops: RenderOperators, rest: string[]): Promise<number> {
  const { values, ids } = args(rest, { json: { type: 'boolean' }, owner: { type: 'string' } }, 1);
  const id = ids[0];
  if (!id) throw new UsageError('show needs a render id');
  const tl = await ops.show(id, viewerFrom(values));
  out(values.json ? JSON.stringify(tl, null, 2) : formatTimeline(tl));
  return 0;
}

async function outputs(ops: RenderOperators, rest: string[]): Promise<number> {
  const { values, ids } = args(rest, { dir: { type: 'string' }, owner: { type: 'string' } }, 1);
  const viewer = viewerFrom(values);
  const id = ids[0];
  if (!id) throw new UsageError('outputs needs a render id');
  if (typeof values.dir !== 'string' || values.dir === '') throw new UsageError('outputs needs --dir D');
  const refs = await ops.outputs(id, viewer);
  if (refs.length === 0) {
    err(`render ${id} has no outputs`);
    return 1;
  }
  await mkdir(values.dir, { recursive: true });
  for (let n = 0; n < refs.length; n++) {
    const { ref, bytes } = await ops.output(id, n, viewer);
    const ext = ({ 'image/jpeg': 'jpg', 'image/webp': 'webp', 'video/mp4': 'mp4', 'video/webm': 'webm' } as Record<string, string>)[ref.mime] ?? 'png';
    const file = path.join(values.dir, `${id}-${n}.${ext}`);
    await writeFile(file, bytes);
    out(file);
  }
  return 0;
}

async function replay(ops: RenderOperators, rest: string[]): Promise<number> {
  const { values, ids } = args(
    rest,
    {
      'new-seed': { type: 'boolean' },
      failed: { type: 'boolean' },
      since: { type: 'string' },
      until: { type: 'string' },
      model: { type: 'string' },
      'task-queue': { type: 'string' },
      'dry-run': { type: 'boolean' },
      'include-replayed': { type: 'boolean' },
      owner: { type: 'string' },
      json: { type: 'boolean' },
    },
    1,
  );
  const viewer = viewerFrom(values);
  if (values.failed) {
    if (ids.length > 0) throw new UsageError('replay --failed takes no render id');
    if (typeof values.since !== 'string') throw new UsageError('replay --failed needs --since T (and usually --until T)');
    if (values['new-seed']) throw new UsageError('--new-seed is for single replays: a bulk replay re-renders the failed requests as they were');
    const f = filtersFrom({ since: values.since, until: values.until, model: values.model, 'task-queue': values['task-queue'], owner: values.owner });
    const result = await ops.replayFailed({
      since: f.since!,
      ...(f.until ? { until: f.until } : {}),
      ...(f.model ? { model: f.model } : {}),
      ...(f.taskQueue ? { taskQueue: f.taskQueue } : {}),
      ...(f.owner ? { owner: f.owner } : {}),
      dryRun: values['dry-run'] === true,
      includeReplayed: values['include-replayed'] === true,
    });
    out(values.json ? JSON.stringify(result, null, 2) : formatBulk(result));
    return 0;
  }
  const id = ids[0];
  if (!id) throw new UsageError('replay needs a render id, or --failed --since T');
  const started = await ops.replay(id, { newSeed: values['new-seed'] === true, viewer });
  out(
    values.json
      ? JSON.stringify(started, null, 2)
      : `replaying ${id} as ${started.renderId} (seed ${started.seed}${started.newSeed ? ', new' : ', same as the original'})`,
  );
  return 0;
}

async function cancel(ops: RenderOperators, rest: string[]): Promise<number> {
  const { values, ids } = args(rest, { owner: { type: 'string' } }, 1);
  const id = ids[0];
  if (!id) throw new UsageError('cancel needs a render id');
  await ops.cancel(id, viewerFrom(values));
  out(`cancel requested for ${id}`);
  return 0;
}

async function prune(rest: string[], where: Pick<PruneOptions, 'client' | 'namespace' | 'blobs' | 'comfyInputDir'>): Promise<number> {
  const { values } = args(rest, { 'older-than': { type: 'string' }, 'dry-run': { type: 'boolean' }, json: { type: 'boolean' } });
  const spec = values['older-than'];
  if (typeof spec !== 'string') throw new UsageError('prune needs --older-than D (for example 7d or 12h)');
  const now = new Date();
  const cutoff = /^\d+(?:\.\d+)?\s*(s|m|min|h|d|w)$/.test(spec.trim()) ? parseTimeSpec(spec, now) : undefined;
  if (!cutoff) throw new UsageError(`--older-than: expected a duration such as 7d, 12h or 30m, got ${JSON.stringify(spec)}`);
  const result = await pruneRenders({ ...where, olderThanMs: now.getTime() - cutoff.getTime(), dryRun: values['dry-run'] === true, now });
  if (values.json) {
    out(JSON.stringify(result, null, 2));
    return 0;
  }
  const verb = result.dryRun ? 'would free' : 'freed';
  out(
    `${result.dryRun ? 'dry run: ' : ''}renders that ended before ${result.cutoff}: ${result.rendersDeleted.length} ${result.dryRun ? 'would be' : ''} deleted; ` +
      `${result.rendersKept} kept; blobs: ${result.blobsDeleted} (${result.bytesFreed} bytes) ${verb}` +
      (result.comfyInputsDeleted ? `; ComfyUI input files: ${result.comfyInputsDeleted}` : ''),
  );
  return 0;
}

// ------------------------------------------------------------------------------------------ formatting

const time = (iso: string | undefined): string => (iso ? iso.replace('T', ' ').replace(/\.\d+Z$/, 'Z') : '-');

export function duration(ms: number | undefined): string {
  if (ms === undefined) return '-';
  if (ms < 1_000) return `${ms} ms`;
  if (ms < 60_000) return `${(ms / 1_000).toFixed(1)} s`;
  const m = Math.floor(ms / 60_000);
  return `${m}m${String(Math.round((ms - m * 60_000) / 1_000)).padStart(2, '0')}s`;
}

const clip = (s: string, n: number): string => {
  const one = s.replace(/\s+/g, ' ').trim();
  return one.length > n ? `${one.slice(0, n - 1)}…` : one;
};

export function table(renders: RenderSummary[]): string {
  const head = ['ID', 'STATUS', 'OUTCOME', 'OWNER', 'MODEL', 'KIND', 'PRIO', 'STARTED', 'TOOK', 'SEED', 'PROMPT / REASON'];
  const rows = renders.map((r) => [
    r.id,
    r.status,
    outcomeCell(r),
    r.owner ?? '-',
    r.model ?? '-',
    r.kind ?? '-',
    r.priority === undefined ? '-' : String(r.priority),
    time(r.startedAt),
    r.status === 'running' ? '-' : duration(r.durationMs),
    r.seed === undefined ? '-' : String(r.seed),
    clip(
      r.reason ??
        `${r.outcome === 'partial' || r.outcome === 'blank' ? `[${r.outcomeSummary ?? r.outcome}] ` : ''}${r.replayOf ? `(replay of ${r.replayOf}) ` : ''}${r.prompt ?? ''}`,
      90,
    ),
  ]);
  const widths = head.map((h, i) => Math.max(h.length, ...rows.map((row) => row[i]!.length)));
  const line = (cells: string[]): string =>
    cells
      .map((c, i) => (i === cells.length - 1 ? c : c.padEnd(widths[i]!)))
      .join('  ')
      .trimEnd();
  return [line(head), ...rows.map(line)].join('\n');
}

/** `completed`, `partial`, `blank`, `failed:ComfyExecution`; `-` while running. */
function outcomeCell(r: RenderSummary): string {
  if (!r.outcome) return '-';
  return r.failureClass && r.outcome === 'failed' ? `failed:${r.failureClass}` : r.outcome;
}

function graphLines(graph: ComfyGraph): string[] {
  return Object.entries(graph).map(([id, node]) => {
    const inputs = Object.entries(node.inputs ?? {})
      .map(
        ([k, v]) =>
          `${k}=${Array.isArray(v) && v.length === 2 && typeof v[0] === 'string' && typeof v[1] === 'number' ? `@${v[0]}.${v[1]}` : clip(JSON.stringify(v), 60)}`,
      )
      .join(' ');
    return `    ${id.padEnd(10)} ${node.class_type.padEnd(26)} ${inputs}`;
  });
}

/** The resolved request's lines in `renders show`: what its kind carries. */
function requestLines(r: RenderRequest): string[] {
  const L: string[] = [];
  const image = isImageRender(r) ? r : undefined;
  const images = isImagesRender(r) ? r : undefined;
  let sampling = '';
  if (!isImagesRender(r)) {
    L.push(`  prompt   ${JSON.stringify(r.prompt)}`);
    if (r.kind !== 'prompt' && r.negativePrompt) L.push(`  negative ${JSON.stringify(r.negativePrompt)}`);
    const guidance = image?.guidance !== undefined ? `  guidance ${image.guidance}` : '';
    sampling = `  steps ${r.steps}  cfg ${r.cfg}${guidance}  ${r.sampler}/${r.scheduler}${image ? `  denoise ${image.denoise}` : ''}`;
  }
  L.push(`  seed ${r.seed}  ${r.width}x${r.height}${sampling}  batch ${r.batchSize}x${r.nIter}`);
  const inputs = [
    image?.initImage && `init ${image.initImage.sha256.slice(0, 12)}`,
    image?.mask && `mask ${image.mask.sha256.slice(0, 12)}`,
    ...((image ?? images)?.extraImages.map((e, i) => `extra[${i}] ${e.sha256.slice(0, 12)}`) ?? []),
  ].filter(Boolean);
  if (inputs.length > 0) L.push(`  inputs   ${inputs.join(', ')}`);
  return L;
}

export function formatTimeline(tl: RenderTimeline): string {
  const L: string[] = [];
  const headline = tl.outcome && tl.outcome.outcome !== tl.status ? ` (${tl.outcome.outcome.toUpperCase()})` : '';
  L.push(
    `${tl.id}  ${tl.status.toUpperCase()}${headline}  ${tl.model ?? '?'} ${tl.kind ?? ''}${tl.backend ? `  backend ${tl.backend}` : ''}${tl.priority !== undefined ? `  priority ${tl.priority}` : ''}`,
  );
  L.push(
    `  started ${time(tl.startedAt)}  closed ${time(tl.closedAt)}  took ${duration(tl.durationMs)}  (${tl.historyEvents} history events, queue ${tl.taskQueue ?? '?'})`,
  );
  if (tl.replayOf) L.push(`  replay of ${tl.replayOf}`);
  if (tl.cancelRequestedAt) L.push(`  cancel requested at ${time(tl.cancelRequestedAt)}`);
  if (tl.outcome) L.push(`  OUTCOME: ${tl.outcome.summary}${tl.outcome.failureClass ? ` (class ${tl.outcome.failureClass})` : ''}`);
  if (tl.reason) L.push(`  REASON: ${tl.reason}`);
  const detail = tl.failure ? rootDetails(tl.failure) : undefined;
  if (detail) L.push(`  details: ${clip(JSON.stringify(detail), 400)}`);
  for (const f of tl.workflowTaskFailures) L.push(`  workflow task failed: ${clip(f.message, 300)}`);

  if (tl.request) L.push('', 'request (resolved):', ...requestLines(tl.request));

  L.push('', 'timeline:');
  for (const s of tl.stages) {
    L.push(
      `  ${s.name.padEnd(20)} ${s.outcome.padEnd(10)} ${time(s.scheduledAt).padEnd(22)} ${duration(s.durationMs).padStart(8)}${s.local ? '  (local)' : ''}${s.cancelRequested ? '  (cancel requested)' : ''}`,
    );
    for (const a of s.attempts) {
      const err = a.error ? `  ${a.error.type ?? 'Error'}: ${clip(a.error.message, 160)}` : '';
      const note = a.note ? `  (${a.note})` : '';
      const prompt = a.promptId ? `  prompt ${a.promptId}` : '';
      const on = a.backend ? `  on ${a.backend}` : '';
      L.push(
        `    attempt ${String(a.attempt).padEnd(10)} ${a.outcome.padEnd(10)} ${time(a.startedAt).padEnd(22)} ${duration(a.durationMs).padStart(8)}${prompt}${on}${err}${note}`,
      );
      if (a.steps?.length) L.push(`      ${a.steps.map((t) => `${t.stage} ${duration(t.ms)}`).join(', ')}`);
    }
    if (s.heartbeat) L.push(`    heartbeat ${clip(JSON.stringify(s.heartbeat), 160)}`);
  }
  if (tl.timings?.length) L.push(`  workflow timings: ${tl.timings.map((t) => `${t.stage} ${duration(t.ms)}`).join(', ')}`);

  if (tl.prompts.length > 0) {
    L.push('', 'prompts:');
    for (const p of tl.prompts) {
      // An item stopped by interrupt or skip completed its activity, but not its prompt.
      const stopped = p.stopped;
      const what = stopped ? `${p.outcome ?? ''} (${stopped.by === 'skip' ? 'skipped' : 'interrupted'}${stepOf(stopped)})` : (p.outcome ?? '');
      L.push(`  item ${p.item}  ${p.promptId}  attempt ${p.attempt ?? '?'}  ${what}`);
    }
  }
  if (tl.graphs.length > 0) {
    L.push('', 'graphs (from buildGraph; --json for the exact JSON):');
    for (const g of tl.graphs) {
      L.push(`  item ${g.item}  seed ${g.seed}`);
      L.push(...graphLines(g.graph));
    }
  }
  L.push('', tl.outputs.length > 0 ? 'outputs:' : 'outputs: none');
  tl.outputs.forEach((o, n) => {
    const oo = tl.outputOutcomes?.[n];
    const what = [
      oo?.outcome === 'partial' ? `PARTIAL (${oo.stoppedBy === 'skip' ? 'skipped' : 'interrupted'}${stepOf(oo)})` : '',
      o.blank ? `BLANK (${o.blank === 'black' ? 'black: NaN in the VAE' : 'one uniform colour'})` : '',
    ].filter(Boolean);
    L.push(`  ${n}  sha256 ${o.sha256}  ${o.mime}  ${o.width ?? '?'}x${o.height ?? '?'}  ${o.size} B${what.length > 0 ? `  ${what.join('  ')}` : ''}`);
  });
  if (tl.webhook) L.push('', webhookLine(tl.webhook));
  return L.join('\n');
}

/** `webhook: DELIVERED video.completed to https://… (webhook-id msg_…, 3 tries, last status 200)`. */
export function webhookLine(w: NonNullable<RenderTimeline['webhook']>): string {
  const tries = `${w.attempts}${w.maxAttempts ? ` of ${w.maxAttempts}` : ''} ${w.attempts === 1 ? 'try' : 'tries'}`;
  const facts = [
    `webhook-id ${w.webhookId ?? '?'}`,
    tries,
    w.lastStatus !== undefined ? `last status ${w.lastStatus}` : undefined,
    w.deliveredAt ? `delivered at ${time(w.deliveredAt)}` : undefined,
    w.nextAttemptAt ? `next try at ${time(w.nextAttemptAt)}` : undefined,
  ].filter(Boolean);
  const last = w.lastError && w.state !== 'delivered' ? `\n  last error: ${clip(w.lastError, 300)}` : '';
  return `webhook: ${w.state.toUpperCase()} ${w.type ?? ''} to ${w.url ?? '?'} (${facts.join(', ')})\n  delivery workflow ${w.workflowId}${last}`;
}

const stepOf = (o: { step?: number; steps?: number }): string => (o.step !== undefined && o.steps !== undefined ? ` at step ${o.step}/${o.steps}` : '');

function rootDetails(f: NonNullable<RenderTimeline['failure']>): unknown {
  let v = f;
  while (v.cause) v = v.cause;
  return v.details;
}

export function formatBulk(r: BulkReplayResult): string {
  const L: string[] = [`${r.dryRun ? 'dry run: would replay' : 'replaying'} failed renders matching: ${r.query}`];
  let n = 0;
  for (const i of r.items) {
    const why = i.reason ? `  (${clip(i.reason, 100)})` : '';
    if (i.skipped) L.push(`  skip    ${i.originalId}  ${i.skipped}`);
    else if (r.dryRun) {
      n++;
      L.push(`  would   ${i.originalId}  ${i.model ?? ''}  started ${time(i.startedAt)}${why}`);
    } else {
      n++;
      L.push(`  replay  ${i.originalId} -> ${i.renderId}  ${i.model ?? ''}${why}`);
    }
  }
  L.push(`${n} ${r.dryRun ? 'would be replayed' : 'replayed'}, ${r.items.length - n} skipped`);
  return L.join('\n');
}
