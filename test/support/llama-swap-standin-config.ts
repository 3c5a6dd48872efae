/**
 * The llama-swap stand-in's reading of a llama-swap config and of requests (test/support/llama-swap-standin.ts):
 * what it takes from the YAML, and how a model is found in a request. Each rule cites docs/llama-swap-facts.md.
 */
import type { ChildProcess } from 'node:child_process';
import type http from 'node:http';
import { parse as parseYaml } from 'yaml';

export interface Entry {
  id: string;
  cmd: string;
  cmdStop?: string;
  proxy: string;
  checkEndpoint: string;
  aliases: string[];
  env: string[];
  ttl: number;
  unloadTimeout: number;
  concurrencyLimit: number;
  unlisted: boolean;
  group: string;
}

export interface Group {
  swap: boolean;
  exclusive: boolean;
  persistent: boolean;
}

// docs/llama-swap-facts.md:15 — `model` in a JSON body.
export const JSON_ROUTES = new Set([
  '/v1/chat/completions',
  '/v1/completions',
  '/v1/embeddings',
  '/v1/audio/speech',
  '/v1/images/generations',
  '/sdapi/v1/txt2img',
  '/sdapi/v1/img2img',
  '/audioapi/v1/tasks/run',
]);
// docs/llama-swap-facts.md:16 — `model` as a multipart or urlencoded form field.
export const FORM_ROUTES = new Set(['/v1/audio/transcriptions', '/v1/images/edits']);
// docs/llama-swap-facts.md:17 — `?model=` on a GET.
export const QUERY_ROUTES = new Set(['/v1/audio/voices', '/sdapi/v1/loras', '/props']);

/** Substitutes `${name}` macros in every string of an entry (docs/llama-swap-facts.md:88). */
function substitute(value: unknown, macros: Record<string, string>): unknown {
  if (typeof value === 'string') return value.replace(/\$\{([A-Za-z0-9_]+)\}/g, (m, name: string) => macros[name] ?? m);
  if (Array.isArray(value)) return value.map((v) => substitute(v, macros));
  if (value && typeof value === 'object') return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, substitute(v, macros)]));
  return value;
}

/** A POSIX-shell-like split without a shell (docs/llama-swap-facts.md:87): quotes group, nothing expands. */
export function splitCommand(line: string): string[] {
  const args: string[] = [];
  let cur = '';
  let quote: string | undefined;
  let any = false;
  for (const ch of line) {
    if (quote) {
      if (ch === quote) quote = undefined;
      else cur += ch;
    } else if (ch === '"' || ch === "'") {
      quote = ch;
      any = true;
    } else if (/\s/.test(ch)) {
      if (any || cur) args.push(cur);
      cur = '';
      any = false;
    } else cur += ch;
  }
  if (any || cur) args.push(cur);
  return args;
}

export interface StandinOptions {
  /** YAML text of a llama-swap config. */
  config: string;
  /** Macro values that replace the file's own (paths, ports of the test). */
  macros?: Record<string, string>;
  /** Per-entry overrides applied after loading (e.g. a short ttl); `env` entries are added to the file's. */
  overrides?: Record<string, Partial<Pick<Entry, 'ttl' | 'unloadTimeout' | 'cmd' | 'env' | 'proxy' | 'checkEndpoint'>>>;
  /** Listen port (default: any free one). */
  port?: number;
}

export interface StandinConfig {
  entries: Map<string, Entry>;
  groups: Map<string, Group>;
  aliasOf: Map<string, string>;
  healthCheckTimeoutMs: number;
  includeAliasesInList: boolean;
  preload: string[];
}

export function parseStandinConfig(opts: Pick<StandinOptions, 'config' | 'macros' | 'overrides'>): StandinConfig {
  const entries = new Map<string, Entry>();
  const groupsOut = new Map<string, Group>();
  const aliasOf = new Map<string, string>();
  const raw = parseYaml(opts.config) as Record<string, unknown>;
  const macros = { ...(raw.macros as Record<string, string> | undefined), ...opts.macros };
  let nextPort = Number(raw.startPort ?? 5800);
  const groups = (raw.groups ?? {}) as Record<string, { swap?: boolean; exclusive?: boolean; persistent?: boolean; members?: string[] }>;
  const groupOf = new Map<string, string>();
  for (const [gid, g] of Object.entries(groups)) {
    groupsOut.set(gid, { swap: g.swap ?? true, exclusive: g.exclusive ?? true, persistent: g.persistent ?? false });
    for (const m of g.members ?? []) groupOf.set(m, gid);
  }
  // docs/llama-swap-facts.md:44 — ungrouped entries share a `(default)` group, swap and exclusive.
  groupsOut.set('(default)', { swap: true, exclusive: true, persistent: false });
  for (const [id, value] of Object.entries((raw.models ?? {}) as Record<string, Record<string, unknown>>)) {
    let m = substitute(value, macros) as Record<string, unknown>;
    // docs/llama-swap-facts.md:89 — ${PORT} only for an entry whose cmd uses it.
    if (typeof m.cmd === 'string' && m.cmd.includes('${PORT}')) m = substitute(m, { PORT: String(nextPort++) }) as Record<string, unknown>;
    const entry: Entry = {
      id,
      cmd: String(m.cmd),
      ...(typeof m.cmdStop === 'string' && m.cmdStop ? { cmdStop: m.cmdStop } : {}),
      proxy: String(m.proxy),
      checkEndpoint: typeof m.checkEndpoint === 'string' ? m.checkEndpoint : '/health',
      aliases: (m.aliases as string[] | undefined) ?? [],
      env: (m.env as string[] | undefined) ?? [],
      ttl: Number(m.ttl ?? 0),
      unloadTimeout: Number(m.unloadTimeout ?? raw.unloadTimeout ?? 10),
      concurrencyLimit: Number(m.concurrencyLimit ?? 0) > 0 ? Number(m.concurrencyLimit) : 10,
      unlisted: m.unlisted === true,
      group: groupOf.get(id) ?? '(default)',
    };
    Object.assign(entry, { ...opts.overrides?.[id], env: [...entry.env, ...(opts.overrides?.[id]?.env ?? [])] });
    entries.set(id, entry);
    aliasOf.set(id, id);
    for (const a of entry.aliases) aliasOf.set(a, id);
  }
  const preload = ((raw.hooks as Record<string, Record<string, string[]>> | undefined)?.on_startup?.preload ?? []).map((p) => aliasOf.get(p) ?? p);
  return {
    entries,
    groups: groupsOut,
    aliasOf,
    // docs/llama-swap-facts.md:86 — global, at least 15 s.
    healthCheckTimeoutMs: Math.max(15, Number(raw.healthCheckTimeout ?? 120)) * 1000,
    includeAliasesInList: raw.includeAliasesInList === true,
    preload,
  };
}

export function readBody(req: http.IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.once('end', () => resolve(Buffer.concat(chunks)));
    req.once('error', reject);
  });
}

export function jsonModel(body: Buffer): string | undefined {
  try {
    const v = JSON.parse(body.toString()) as { model?: unknown };
    return typeof v?.model === 'string' ? v.model : undefined;
  } catch {
    return undefined;
  }
}

export function formModel(body: Buffer, contentType: string | undefined): string | undefined {
  if ((contentType ?? '').startsWith('application/x-www-form-urlencoded')) return new URLSearchParams(body.toString()).get('model') ?? undefined;
  const text = body.toString('latin1');
  const marker = 'name="model"';
  const at = text.indexOf(marker);
  if (at < 0) return undefined;
  const start = text.indexOf('\r\n\r\n', at);
  const end = text.indexOf('\r\n', start + 4);
  return start < 0 || end < 0 ? undefined : text.slice(start + 4, end);
}

export function killGroup(child: ChildProcess, signal: NodeJS.Signals): void {
  try {
    process.kill(-child.pid!, signal);
  } catch {
    // Already gone.
  }
}

export function delay(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

export async function probe(url: string): Promise<boolean> {
  try {
    const res = await fetch(url, { signal: AbortSignal.timeout(5_000) });
    await res.arrayBuffer();
    return res.status === 200;
  } catch {
    return false;
  }
}
