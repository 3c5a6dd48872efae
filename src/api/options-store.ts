/**
 * A1111 `/sdapi/v1/options`: clients read `sd_model_checkpoint` as the current model and set it with a POST
 * (single key or the whole echoed dict). Values persist across calls and restarts in `<data>/options.json`.
 *
 * Each client key has its own room: what it sets (its default model, say) it alone sees, on top of the shared
 * values, which only an operator key (or a service without keys) changes. Rooms persist beside the shared file,
 * in `<data>/options.rooms.json`. The caller is the request being served (src/fair/client-context.ts).
 */
import { mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { z } from 'zod';
import { knownOptionsOnly } from './options-schema.ts';
import { currentClient } from '../fair/client-context.ts';

const storedSchema = z.record(z.string(), z.unknown());

/** A client key's own options over the shared ones: the key's name when it is a client key, else none. */
function roomOfCaller(): string | undefined {
  const c = currentClient();
  return c.role === 'client' ? c.owner : undefined;
}

export class OptionsStore {
  private values: Record<string, unknown>;
  private rooms: Record<string, Record<string, unknown>> = {};

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
    try {
      const rooms = z.record(z.string(), storedSchema).parse(JSON.parse(readFileSync(this.roomsFile(), 'utf8')));
      for (const [name, values] of Object.entries(rooms)) this.rooms[name] = knownOptionsOnly(values);
    } catch {
      // no client key has set anything yet
    }
  }

  all(): Record<string, unknown> {
    const room = roomOfCaller();
    return { ...this.values, ...(room !== undefined ? this.rooms[room] : {}) };
  }

  get(key: string): unknown {
    return this.all()[key];
  }

  /** A string option, or undefined when it is unset or not a string. */
  getString(key: string): string | undefined {
    const v = this.get(key);
    return typeof v === 'string' ? v : undefined;
  }

  update(patch: Record<string, unknown>): void {
    const room = roomOfCaller();
    if (room !== undefined) {
      this.rooms = { ...this.rooms, [room]: { ...this.rooms[room], ...patch } };
      return writeAtomically(this.roomsFile(), this.rooms);
    }
    this.values = { ...this.values, ...patch };
    writeAtomically(this.file, this.values);
  }

  private roomsFile(): string {
    return this.file.replace(/(\.json)?$/, '.rooms.json');
  }
}

function writeAtomically(file: string, value: unknown): void {
  mkdirSync(path.dirname(file), { recursive: true });
  const tmp = `${file}.tmp`;
  writeFileSync(tmp, JSON.stringify(value, null, 2));
  renameSync(tmp, file);
}
