/**
 * The structural diff the recording's own comparison script makes, ported: per step, ids (UUIDs, the run
 * tag), timestamps and priority numbers normalised, then status, content type, kept headers and bodies
 * compared by shape and value (shape only for the steps whose values depend on the machine or on earlier
 * history), WebSocket transcripts compared as sequences of frame summaries plus payload shapes per type.
 * One addition, as the brief of the conformance test asks: the fake's data directory is normalised to the
 * real server's install path (`/opt/ComfyUI`), as paths inside messages differ by machine.
 */
import type { Capture } from './replay.ts';
import type { Frame, Step } from './capture-client.ts';

const UUID = /[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}/g;
const UUID_FULL = /^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$/;
const TS_KEYS = new Set(['timestamp', 'create_time', 'execution_start_time', 'execution_end_time']);
const NUM_KEYS = new Set(['number', 'priority']);

export const IGNORE_VALUES_STEPS = new Set([
  'GET /system_stats',
  'GET /object_info/ImageScale',
  'GET /models',
  'GET /models/vae',
  'GET /api/jobs?limit=2',
  'GET /api/jobs?limit=5 after prompt1',
  'GET /history?max_items=1',
]);

type Normalize = (v: unknown) => unknown;

/** A normaliser for one capture; `reset()` restarts id numbering (compare.py does so per step). */
function normalizer(cap: Capture, paths: Array<[string, string]>): { n: Normalize; reset(): void } {
  let ids = new Map<string, string>();
  const ns = (s: string): string => {
    let out = s.replaceAll(cap.run, '<RUN>');
    for (const [from, to] of paths) out = out.replaceAll(from, to);
    return out.replace(UUID, (m) => {
      const u = m.toLowerCase();
      if (!ids.has(u)) ids.set(u, `<ID${ids.size + 1}>`);
      return ids.get(u) as string;
    });
  };
  const n: Normalize = (v) => {
    if (Array.isArray(v)) {
      if (v.length >= 2 && typeof v[0] === 'number' && typeof v[1] === 'string' && UUID_FULL.test(v[1])) return ['<num>', ...v.slice(1).map(n)];
      return v.map(n);
    }
    if (v && typeof v === 'object') {
      const out: Record<string, unknown> = {};
      for (const [k, x] of Object.entries(v)) {
        const key = ns(k);
        if (TS_KEYS.has(k)) out[key] = typeof x === 'number' ? '<ts>' : x;
        else if (NUM_KEYS.has(k) && typeof x === 'number') out[key] = '<num>';
        else out[key] = n(x);
      }
      return out;
    }
    if (typeof v === 'string') return ns(v);
    return v;
  };
  return { n, reset: () => (ids = new Map()) };
}

function tname(v: unknown): string {
  if (v === null || v === undefined) return 'null';
  if (typeof v === 'boolean') return 'bool';
  if (typeof v === 'number') return 'number';
  if (typeof v === 'string') return 'string';
  return Array.isArray(v) ? 'array' : 'object';
}

function short(v: unknown, len = 160): string {
  const s = JSON.stringify(v) ?? 'undefined';
  return s.length <= len ? s : `${s.slice(0, len)}…`;
}

function diff(a: unknown, b: unknown, path: string, out: string[], ignoreValues: boolean): void {
  if (tname(a) !== tname(b)) {
    out.push(`${path}: type real=${tname(a)} ${short(a, 100)} | fake=${tname(b)} ${short(b, 100)}`);
    return;
  }
  if (Array.isArray(a) && Array.isArray(b)) {
    if (a.length !== b.length) out.push(`${path}: length real=${a.length} fake=${b.length}`);
    for (let i = 0; i < Math.min(a.length, b.length); i++) diff(a[i], b[i], `${path}[${i}]`, out, ignoreValues);
    return;
  }
  if (a && b && typeof a === 'object' && typeof b === 'object') {
    const ra = a as Record<string, unknown>;
    const rb = b as Record<string, unknown>;
    for (const k of Object.keys(ra)) if (!(k in rb)) out.push(`${path}.${k}: only on real = ${short(ra[k])}`);
    for (const k of Object.keys(rb)) if (!(k in ra)) out.push(`${path}.${k}: only on fake = ${short(rb[k])}`);
    for (const k of Object.keys(ra)) if (k in rb) diff(ra[k], rb[k], `${path}.${k}`, out, ignoreValues || k === 'traceback');
    return;
  }
  if (!ignoreValues && a !== b) out.push(`${path}: value real=${short(a)} | fake=${short(b)}`);
}

function pyish(v: unknown): string {
  if (v === null || v === undefined) return 'None';
  if (Array.isArray(v)) return `[${v.map((x) => (typeof x === 'string' ? `'${x}'` : pyish(x))).join(', ')}]`;
  if (typeof v === 'string' || typeof v === 'number' || typeof v === 'boolean') return String(v);
  return JSON.stringify(v);
}

/** `frame_line()`: the summary a transcript is compared by. */
export function frameLine(f: Frame): string {
  if (f.kind === 'binary') return `BINARY type=${f.event_type}`;
  const d = f.data as Record<string, unknown> | null;
  const isObj = d !== null && typeof d === 'object' && !Array.isArray(d);
  const keys = isObj ? Object.keys(d).join(',') : tname(d);
  let extra = '';
  if (isObj && f.type === 'executing') extra = ` node=${pyish(d.node)}`;
  if (isObj && f.type === 'progress_state') {
    extra = ` ${Object.entries((d.nodes ?? {}) as Record<string, { state?: unknown }>)
      .map(([k, v]) => `${k}:${pyish(v.state)}`)
      .join(',')}`;
  }
  if (isObj && f.type === 'status') extra = ` q=${pyish((d.status as { exec_info?: { queue_remaining?: unknown } } | undefined)?.exec_info?.queue_remaining)}`;
  if (isObj && f.type === 'execution_cached') extra = ` nodes=${pyish(d.nodes)}`;
  return `${String(f.type)} {${keys}}${extra}`;
}

/** Shortest-edit listing of two summary sequences (for the failure message). */
function sequenceDiff(a: string[], b: string[]): string[] {
  const lcs: number[][] = Array.from({ length: a.length + 1 }, () => new Array<number>(b.length + 1).fill(0));
  for (let i = a.length - 1; i >= 0; i--)
    for (let j = b.length - 1; j >= 0; j--) lcs[i]![j] = a[i] === b[j] ? lcs[i + 1]![j + 1]! + 1 : Math.max(lcs[i + 1]![j]!, lcs[i]![j + 1]!);
  const out: string[] = [];
  let [i, j] = [0, 0];
  while (i < a.length || j < b.length) {
    if (i < a.length && j < b.length && a[i] === b[j]) {
      i++;
      j++;
    } else if (j < b.length && (i >= a.length || lcs[i]![j + 1]! >= lcs[i + 1]![j]!)) out.push(`+ fake: ${b[j++]}`);
    else out.push(`- real: ${a[i++]}`);
  }
  return out;
}

export interface StepDiff {
  step: string;
  lines: string[];
}

/** All differences, per step of the real capture (and steps only the fake has). */
export function compareCaptures(real: Capture, fake: Capture, fakePaths: Array<[string, string]>): StepDiff[] {
  const A = normalizer(real, []);
  const B = normalizer(fake, fakePaths);
  const byName = new Map(fake.steps.map((s) => [s.name, s]));
  const result: StepDiff[] = [];
  for (const s of real.steps) {
    const t = byName.get(s.name);
    A.reset();
    B.reset();
    const lines: string[] = [];
    if (!t) {
      result.push({ step: s.name, lines: ['(no such step in fake capture)'] });
      continue;
    }
    if ('frames' in s || 'ws1' in s) {
      for (const key of ['frames', 'ws1', 'ws2'] as const) {
        if (!(key in s)) continue;
        const fa = (s[key] as Frame[]).map((f) => A.n(f) as Frame);
        const fb = ((t[key] as Frame[] | undefined) ?? []).map((f) => B.n(f) as Frame);
        const la = fa.map(frameLine);
        const lb = fb.map(frameLine);
        if (la.join('\n') !== lb.join('\n'))
          lines.push(`[${key}] sequence differs (real ${la.length} frames, fake ${lb.length}):`, ...sequenceDiff(la, lb).map((l) => `    ${l}`));
        const group = (fs: Frame[]) => {
          const m = new Map<string, unknown[]>();
          for (const f of fs) if (f.kind === 'text') m.set(String(f.type), [...(m.get(String(f.type)) ?? []), f.data]);
          return m;
        };
        const [ga, gb] = [group(fa), group(fb)];
        const out: string[] = [];
        for (const [ty, xs] of ga) {
          const ys = gb.get(ty);
          if (!ys) continue;
          for (let i = 0; i < Math.min(xs.length, ys.length); i++) diff(xs[i], ys[i], `${ty}[${i}]`, out, false);
        }
        const seen = new Set<string>();
        for (const o of out) {
          const k = (o.split(':')[0] as string).replace(/\[\d+\]/g, '[i]');
          if (seen.has(k)) continue;
          seen.add(k);
          lines.push(`[${key}] payload ${o}`);
        }
      }
    } else {
      lines.push(...compareHttp(s, t, A.n, B.n));
    }
    if (lines.length > 0) result.push({ step: s.name, lines });
  }
  const realNames = new Set(real.steps.map((s) => s.name));
  for (const s of fake.steps) if (!realNames.has(s.name)) result.push({ step: s.name, lines: ['(only in fake capture)'] });
  return result;
}

function compareHttp(s: Step, t: Step, nA: Normalize, nB: Normalize): string[] {
  const lines: string[] = [];
  if (s.status !== t.status) lines.push(`status real=${String(s.status)} fake=${String(t.status)}`);
  const ct = (x: Step) => (typeof x.content_type === 'string' ? x.content_type : '').split(';')[0];
  if (ct(s) !== ct(t)) lines.push(`content-type real=${String(s.content_type)} fake=${String(t.content_type)}`);
  const hdrs = (x: Step, n: Normalize) =>
    Object.fromEntries(
      Object.entries((x.headers ?? {}) as Record<string, string>)
        .filter(([k]) => k.toLowerCase() !== 'content-type')
        .map(([k, v]) => [k.toLowerCase(), n(v)])
        .sort(([a], [b]) => String(a).localeCompare(String(b))),
    );
  if (JSON.stringify(hdrs(s, nA)) !== JSON.stringify(hdrs(t, nB))) lines.push(`headers real=${short(hdrs(s, nA))} fake=${short(hdrs(t, nB))}`);
  for (const key of ['json', 'text', 'head_hex'] as const) {
    if (!(key in s) && !(key in t)) continue;
    if (key in s !== key in t) {
      lines.push(`body kind: real has ${key}=${short(s[key])} fake has ${['json', 'text', 'head_hex'].filter((k) => k in t).join(',')}`);
      break;
    }
    if (key === 'head_hex') {
      if (String(s.head_hex).slice(0, 8) !== String(t.head_hex).slice(0, 8))
        lines.push(`body bytes differ: real ${String(s.head_hex)} fake ${String(t.head_hex)}`);
      continue;
    }
    const out: string[] = [];
    diff(nA(s[key]), nB(t[key]), 'body', out, IGNORE_VALUES_STEPS.has(s.name));
    lines.push(...out);
  }
  return lines;
}
