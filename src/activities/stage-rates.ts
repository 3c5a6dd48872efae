/**
 * What the silent stages of a prompt took on this worker's ComfyUIs, per model: the text encoding (ms) and
 * the decode (ms per megapixel of output, frames counted: a 1280x704 video of 121 frames is 109 units), as a
 * moving average of the last renders. The progress of the next render of that model (item-progress.ts)
 * estimates its decode from it — frames and size known, the rate measured — instead of guessing from the
 * sampling time. Kept in DATA_DIR (`stage-rates.json`, a few hundred bytes) so a restarted worker keeps
 * what it measured; a missing or unreadable file is an empty one. The file is written behind the render, not
 * in its way: recorded as a prompt ends, before its outputs are collected, a synchronous write and rename took
 * ~0.6 ms of every render on this box (bench/README.md, issue 25); renders recorded while a write is under
 * way are folded into the next one.
 */
import { readFileSync } from 'node:fs';
import { mkdir, rename, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { threadId } from 'node:worker_threads';
import type { StageEstimate } from './item-progress.ts';
import type { SilentStagePriors } from '../models/stage-priors.ts';

interface ModelRates {
  /** Text encoding, ms. */
  encodeMs?: number;
  /** Decode, ms per output megapixel-frame. */
  decodeMsPerUnit?: number;
}

/** Weight of the newest measurement in the moving average. */
const NEW_WEIGHT = 0.5;
const MAX_MODELS = 200;
/** Tells apart the temporary files of several instances in one process (tests, workers in-process). */
let instances = 0;

/** What the estimates read of a request (a RenderRequest is one). */
export interface SizedRequest {
  model: string;
  width: number;
  height: number;
  hires?: { width: number; height: number };
  video?: { frames: number };
}

/** The decode's size: output megapixels times frames (one image per prompt: frames 1). */
export function decodeUnits(request: Omit<SizedRequest, 'model'>): number {
  const w = request.hires?.width ?? request.width;
  const h = request.hires?.height ?? request.height;
  return Math.max(1e-3, (w * h * (request.video?.frames ?? 1)) / 1e6);
}

export class StageRates {
  private readonly rates = new Map<string, ModelRates>();
  private readonly tmp: string | undefined;
  private dirty = false;
  private writing: Promise<void> | undefined;

  constructor(private readonly file?: string) {
    if (!file) return;
    this.tmp = `${file}.${process.pid}.${threadId}.${instances++}.tmp`;
    try {
      const parsed = JSON.parse(readFileSync(file, 'utf8')) as unknown;
      if (parsed && typeof parsed === 'object') {
        for (const [model, r] of Object.entries(parsed as Record<string, ModelRates>)) {
          const clean: ModelRates = {};
          if (isPositive(r?.encodeMs)) clean.encodeMs = r.encodeMs;
          if (isPositive(r?.decodeMsPerUnit)) clean.decodeMsPerUnit = r.decodeMsPerUnit;
          this.rates.set(model, clean);
        }
      }
    } catch {
      // No measurements yet (or a damaged file): estimates start from scratch.
    }
  }

  /** What the encode and the decode of `request` should take, from earlier renders of its model (and its family's priors). */
  estimate(request: SizedRequest, prior?: SilentStagePriors): StageEstimate {
    const r = this.rates.get(request.model);
    const out: StageEstimate = { decodeUnits: decodeUnits(request) };
    if (prior) out.prior = prior;
    if (r?.encodeMs !== undefined) out.encodeMs = r.encodeMs;
    if (r?.decodeMsPerUnit !== undefined) out.decodeMs = r.decodeMsPerUnit * decodeUnits(request);
    return out;
  }

  /** A prompt of `request` finished: fold what its silent stages took into the model's rates. */
  record(request: SizedRequest, measured: { encodeMs?: number; decodeMs?: number }): void {
    const r = { ...this.rates.get(request.model) };
    const blend = (old: number | undefined, next: number): number => (old === undefined ? next : old * (1 - NEW_WEIGHT) + next * NEW_WEIGHT);
    if (isPositive(measured.encodeMs)) r.encodeMs = blend(r.encodeMs, measured.encodeMs);
    if (isPositive(measured.decodeMs)) r.decodeMsPerUnit = blend(r.decodeMsPerUnit, measured.decodeMs / decodeUnits(request));
    this.rates.delete(request.model);
    this.rates.set(request.model, r);
    while (this.rates.size > MAX_MODELS) this.rates.delete(this.rates.keys().next().value!);
    this.save();
  }

  /** Resolves once every rate recorded so far is in the file (or its write failed: the rates stay in memory). */
  flush(): Promise<void> {
    return this.writing ?? Promise.resolve();
  }

  private save(): void {
    if (!this.file) return;
    this.dirty = true;
    this.writing ??= this.writeWhileDirty(this.file, this.tmp!);
  }

  private async writeWhileDirty(file: string, tmp: string): Promise<void> {
    try {
      while (this.dirty) {
        this.dirty = false;
        await mkdir(path.dirname(file), { recursive: true });
        await writeFile(tmp, JSON.stringify(Object.fromEntries(this.rates)));
        await rename(tmp, file);
      }
    } catch {
      // Estimates are a convenience: a read-only DATA_DIR keeps them in memory only.
    } finally {
      // No await between the last look at `dirty` and here: a record() after it starts a new write.
      this.writing = undefined;
    }
  }
}

const isPositive = (v: unknown): v is number => typeof v === 'number' && Number.isFinite(v) && v > 0;
