/**
 * The two lists of models the docs carry, written from the registry so a new model is one profile file:
 * the model table of docs/models.md and the aliases of the front's entry in docs/llama-swap.example.yaml (llama-swap
 * routes a request by its `model`, so every id the service serves must be one of them). Each list sits
 * between marker comments; `npm run docs:models` rewrites what is between them (`npm test` runs it first),
 * and test/unit/model-docs.test.ts holds the files to what this renders.
 *
 * Usage: npx tsx tools/model-docs.ts [--check]   (--check: write nothing, exit 1 naming a stale file)
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { pathToFileURL } from 'node:url';
import { BUILTIN_PROFILES } from '../src/models/builtin-profiles.ts';
import type { ModelProfile } from '../src/models/profile.ts';

export const MODELS_DOC_URL = new URL('../docs/models.md', import.meta.url);
export const LLAMA_SWAP_EXAMPLE_URL = new URL('../docs/llama-swap.example.yaml', import.meta.url);

const TABLE_START = '<!-- models: generated from the model registry (src/models) by `npm run docs:models` -->';
const TABLE_END = '<!-- /models -->';
const ALIASES_START = '# models: generated from the model registry (src/models) by `npm run docs:models`';
const ALIASES_END = '# /models';

/** What a model renders, in the API's words. */
function kindsCell(p: ModelProfile): string {
  if (p.video) {
    const audio = p.video.audio ? ' + audio' : '';
    return `video${audio}: ${p.video.tasks.map((t) => `\`${t}\``).join(', ')}`;
  }
  return p.kinds.map((k) => (k === 'edit' ? `edit (\`extra_images\`, up to ${p.maxExtraImages})` : k)).join(', ');
}

/** The defaults a request without them gets. */
function defaultsCell(p: ModelProfile): string {
  const d = p.defaults;
  const parts: string[] = [];
  const v = p.video;
  if (v) {
    const grid = `${v.frameGrid.step}k+${v.frameGrid.offset}`;
    const fps = v.minFps === v.maxFps ? `${v.defaultFps} fps only` : `${v.defaultFps} fps`;
    parts.push(`${d.width}×${d.height}`, `${v.defaultFrames} frames (${grid})`, fps);
  }
  parts.push(p.cfgMode === 'fixed-1' ? 'cfg 1 (fixed)' : `cfg ${d.cfg}`);
  if (d.guidance !== undefined) parts.push(`guidance ${d.guidance}`);
  parts.push(`${d.steps} steps`, `${d.sampler}/${d.scheduler}`);
  if (d.shift !== undefined) parts.push(`shift ${d.shift}`);
  return parts.join(', ');
}

/** The models page's table: every built-in model, image models first (the `/v1/models` order). */
export function renderModelTable(profiles: readonly ModelProfile[] = BUILTIN_PROFILES): string {
  const rows = profiles.map((p) => `| \`${p.id}\` | ${p.title} | ${kindsCell(p)} | ${defaultsCell(p)} |`);
  return ['| id | model | kinds | defaults |', '|---|---|---|---|', ...rows].join('\n');
}

/**
 * The aliases of the front's entry: every built-in model id but the entry's own (named after the first
 * one, the entry id is a model id too), indented as the list in the example is.
 */
export function renderLlamaSwapAliases(entryId: string, indent: string, profiles: readonly ModelProfile[] = BUILTIN_PROFILES): string {
  return profiles
    .filter((p) => p.id !== entryId)
    .map((p) => `${indent}- ${p.id}`)
    .join('\n');
}

/** `text` with what lies between the `start` and `end` lines replaced by `body`. Throws if a marker is missing. */
function replaceBetween(text: string, start: string, end: string, body: (startLine: string) => string, file: string): string {
  const lines = text.split('\n');
  const from = lines.findIndex((l) => l.trim() === start);
  const to = lines.findIndex((l, i) => i > from && l.trim() === end);
  if (from < 0 || to < 0) throw new Error(`${file}: the marker lines "${start}" and "${end}" are missing`);
  return [...lines.slice(0, from + 1), body(lines[from]!), ...lines.slice(to)].join('\n');
}

/** docs/models.md with its model table rendered from the registry. */
export function withModelTable(page: string): string {
  return replaceBetween(page, TABLE_START, TABLE_END, () => renderModelTable(), 'docs/models.md');
}

/** The llama-swap example with the front entry's aliases rendered from the registry. */
export function withLlamaSwapAliases(yaml: string): string {
  // The front entry is the model entry whose aliases hold the marker: its key is the line before `name:`.
  const entry = /^ {2}([\w.-]+):\n {4}name: comfy-durable/m.exec(yaml)?.[1];
  if (!entry) throw new Error('docs/llama-swap.example.yaml: the front entry (name: comfy-durable …) is missing');
  return replaceBetween(
    yaml,
    ALIASES_START,
    ALIASES_END,
    (startLine) => renderLlamaSwapAliases(entry, /^\s*/.exec(startLine)![0]),
    'docs/llama-swap.example.yaml',
  );
}

const FILES = [
  { url: MODELS_DOC_URL, name: 'docs/models.md', render: withModelTable },
  { url: LLAMA_SWAP_EXAMPLE_URL, name: 'docs/llama-swap.example.yaml', render: withLlamaSwapAliases },
];

function main(check: boolean): number {
  let stale = 0;
  for (const f of FILES) {
    const text = readFileSync(f.url, 'utf8');
    const rendered = f.render(text);
    if (rendered === text) continue;
    if (check) {
      process.stderr.write(`${f.name}: its model list is not the registry's; run npm run docs:models\n`);
      stale++;
    } else {
      writeFileSync(f.url, rendered);
      process.stdout.write(`docs:models: updated ${f.name}\n`);
    }
  }
  return stale ? 1 : 0;
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) process.exitCode = main(process.argv.includes('--check'));
