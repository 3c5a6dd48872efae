/**
 * A1111 `/sdapi/v1/options`: clients read `sd_model_checkpoint` as the current model and set it with a POST
 * (single key or the whole echoed dict). Values persist across calls and restarts in `<data>/options.json`.
 */
import { mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { z } from 'zod';
import { knownOptionsOnly } from './options-schema.ts';

const storedSchema = z.record(z.string(), z.unknown());

export class OptionsStore {
  private values: Record<string, unknown>;

  constructor(
    private readonly file: string,
    defaults: Record<string, unknown>,
  ) {
    let stored: Record<string, unknown> = {};
    try {
      // Only known options with valid values: junk an older version stored is dropped here, for good.
      stored = knownOptionsOnly(storedSchema.parse(JSON.parse(readFileSync(file, 'utf8'))));
    } catch {
      // first start, or a damaged file: fall back to defaults rather than refusing to start
    }
    this.values = { ...defaults, ...stored };
  }

  all(): Record<string, unknown> {
    return { ...this.values };
  }

  get(key: string): unknown {
    return this.values[key];
  }

  /** A string option, or undefined when it is unset or not a string. */
  getString(key: string): string | undefined {
    const v = this.values[key];
    return typeof v === 'string' ? v : undefined;
  }

  update(patch: Record<string, unknown>): void {
    this.values = { ...this.values, ...patch };
    mkdirSync(path.dirname(this.file), { recursive: true });
    const tmp = `${this.file}.tmp`;
    writeFileSync(tmp, JSON.stringify(this.values, null, 2));
    renameSync(tmp, this.file);
  }
}
