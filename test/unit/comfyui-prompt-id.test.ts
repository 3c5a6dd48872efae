import { spawnSync } from 'node:child_process';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { derivePromptId, isCanonicalUuid } from '../../src/comfyui/prompt-id.ts';

describe('derivePromptId', () => {
  it('is deterministic and canonical', () => {
    const a = derivePromptId(['render-01J', 'run-1', 0, 1]);
    expect(derivePromptId(['render-01J', 'run-1', 0, 1])).toBe(a);
    expect(isCanonicalUuid(a)).toBe(true);
    expect(a).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-8[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
  });

  it('differs when any part differs, and parts are not ambiguous when joined', () => {
    const base = derivePromptId(['w', 'r', 0, 1]);
    expect(derivePromptId(['w', 'r', 0, 2])).not.toBe(base);
    expect(derivePromptId(['w', 'r', 1, 1])).not.toBe(base);
    expect(derivePromptId(['a-b', 'c'])).not.toBe(derivePromptId(['a', 'b-c']));
    expect(derivePromptId([1])).not.toBe(derivePromptId(['1']));
  });

  it('rejects empty and non-finite input', () => {
    expect(() => derivePromptId([])).toThrow();
    expect(() => derivePromptId([Number.NaN])).toThrow();
  });

  it('property: always canonical with version 8 and RFC variant', () => {
    fc.assert(
      fc.property(fc.array(fc.oneof(fc.string(), fc.integer()), { minLength: 1, maxLength: 6 }), (parts) => {
        const id = derivePromptId(parts);
        return isCanonicalUuid(id) && id[14] === '8' && '89ab'.includes(id[19]!);
      }),
    );
  });

  it('round-trips through Python uuid.UUID unchanged (ComfyUI validate_job_id), when python3 exists', () => {
    const ids = Array.from({ length: 20 }, (_, i) => derivePromptId(['x', i]));
    const py = spawnSync('python3', ['-c', 'import sys,uuid\nfor l in sys.stdin.read().split():\n    print(str(uuid.UUID(l)) == l)'], {
      input: ids.join('\n'),
      encoding: 'utf8',
    });
    if (py.error) return; // no python3 here: the regex check above covers the same rule
    expect(py.stdout.trim().split('\n')).toEqual(ids.map(() => 'True'));
  });
});

describe('isCanonicalUuid', () => {
  it('accepts only lowercase hyphenated 8-4-4-4-12', () => {
    expect(isCanonicalUuid('123e4567-e89b-12d3-a456-426614174000')).toBe(true);
    expect(isCanonicalUuid('123E4567-E89B-12D3-A456-426614174000')).toBe(false);
    expect(isCanonicalUuid('123e4567e89b12d3a456426614174000')).toBe(false);
    expect(isCanonicalUuid('{123e4567-e89b-12d3-a456-426614174000}')).toBe(false);
    expect(isCanonicalUuid('render-1')).toBe(false);
  });
});
