/**
 * docker-compose.yml against the Compose Specification's own JSON schema (pinned copy, source and hash in
 * test/fixtures/compose-spec.source.md), after interpolation as `docker compose` does it: once with no .env and
 * once with .env.example's values.
 */
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { parse } from 'yaml';
import { describe, expect, it } from 'vitest';
import { deepMapStrings, interpolate, parseEnvFile } from '../support/compose-file.ts';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const read = (rel: string): string => fs.readFileSync(path.join(ROOT, rel), 'utf8');

const schemaText = read('test/fixtures/compose-spec.json');
const validate = new Ajv2020({ strict: false, allErrors: true }).compile(JSON.parse(schemaText) as object);
const raw = parse(read('docker-compose.yml'), { merge: true }) as unknown;

function errorsOf(model: unknown): string[] {
  if (validate(model)) return [];
  return (validate.errors ?? []).map((e) => `${e.instancePath || '/'} ${e.message ?? ''} ${JSON.stringify(e.params)}`);
}

describe('docker-compose.yml against the Compose Specification schema', () => {
  it('uses the pinned schema copy named in its source note', () => {
    const recorded = /sha256 `([0-9a-f]{64})`/.exec(read('test/fixtures/compose-spec.source.md'))?.[1];
    expect(createHash('sha256').update(schemaText).digest('hex')).toBe(recorded);
  });

  it('is valid as interpolated with no .env', () => {
    expect(errorsOf(deepMapStrings(raw, (s) => interpolate(s, {})))).toEqual([]);
  });

  it('is valid as interpolated with .env.example', () => {
    const env = parseEnvFile(read('.env.example'));
    expect(errorsOf(deepMapStrings(raw, (s) => interpolate(s, env)))).toEqual([]);
  });

  it('the schema does catch mistakes of the kind a hand edit makes', () => {
    const model = deepMapStrings(raw, (s) => interpolate(s, {})) as { services: Record<string, Record<string, unknown>> };
    const broken = structuredClone(model);
    broken.services.worker!.depends_on = { comfyui: { condition: 'service_ready' } };
    broken.services.api!.ports_published = ['7860:7860'];
    broken.services.temporal!.environment = 'DB=postgres12';
    const errors = errorsOf(broken).join('\n');
    expect(errors).toMatch(/\/services\/worker\/depends_on/);
    expect(errors).toMatch(/ports_published/);
    expect(errors).toMatch(/\/services\/temporal\/environment/);
  });
});
