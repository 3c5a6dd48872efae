/**
 * The model table of docs/models.md and the llama-swap example's aliases are the registry's (tools/model-docs.ts
 * writes them; `npm test` runs it first): a model added as one profile file shows up in both, and a hand
 * edit that drops or invents one fails here.
 */
import { readFileSync } from 'node:fs';
import { parse } from 'yaml';
import { describe, expect, it } from 'vitest';
import { listProfiles } from '../../src/models/registry.ts';
import { LLAMA_SWAP_EXAMPLE_URL, MODELS_DOC_URL, renderModelTable, withLlamaSwapAliases, withModelTable } from '../../tools/model-docs.ts';

describe('model lists in the docs (npm run docs:models)', () => {
  it("docs/models.md's table is the registry's, one row per model", () => {
    const page = readFileSync(MODELS_DOC_URL, 'utf8');
    expect(withModelTable(page), 'docs/models.md is stale: run npm run docs:models').toBe(page);
    const rows = renderModelTable()
      .split('\n')
      .slice(2)
      .map((r) => /^\| `([^`]+)`/.exec(r)?.[1]);
    expect(rows).toEqual(listProfiles().map((p) => p.id));
  });

  it('the llama-swap example routes every model id to the front, and nothing else', () => {
    const yaml = readFileSync(LLAMA_SWAP_EXAMPLE_URL, 'utf8');
    expect(withLlamaSwapAliases(yaml), 'docs/llama-swap.example.yaml is stale: run npm run docs:models').toBe(yaml);
    const config = parse(yaml) as { models: Record<string, { name?: string; aliases?: string[] }> };
    const [entry, front] = Object.entries(config.models).find(([, m]) => m.name?.startsWith('comfy-durable'))!;
    expect([entry, ...(front.aliases ?? [])].sort()).toEqual(
      listProfiles()
        .map((p) => p.id)
        .sort(),
    );
  });
});
