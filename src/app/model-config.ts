/**
 * The model settings a process starts with: MODELS_CONFIG applied, DEFAULT_MODEL and DEFAULT_VIDEO_MODEL
 * among the models it then serves. Every problem is one ConfigError line (the command prints it and exits 2),
 * never a stack trace: it is the operator's file or setting that is wrong, not the program.
 */
import { ConfigError, type Config } from '../config/config.ts';
import { disabledModels, getProfile, listProfiles, loadModelOverrides } from '../models/registry.ts';

export function checkModelConfig(config: Pick<Config, 'MODELS_CONFIG' | 'DEFAULT_MODEL' | 'DEFAULT_VIDEO_MODEL'>): void {
  try {
    loadModelOverrides(config.MODELS_CONFIG);
  } catch (err) {
    throw new ConfigError((err as Error).message);
  }
  const off = new Set(disabledModels());
  const all = listProfiles();
  const video = listProfiles().filter((p) => p.video !== undefined);
  const check = (name: string, id: string, served: typeof all, what: string): void => {
    const profile = getProfile(id);
    if (profile && served.includes(profile)) return;
    const why = off.has(id) ? `is switched off in MODELS_CONFIG ${config.MODELS_CONFIG ?? ''}`.trimEnd() : `is not a known ${what}`;
    const choose = served.length > 0 ? `; set ${name} to one of ${served.map((p) => p.id).join(', ')}` : `; every ${what} is switched off`;
    throw new ConfigError(`${name}=${id} ${why}${choose}`);
  };
  check('DEFAULT_MODEL', config.DEFAULT_MODEL, all, 'model');
  check('DEFAULT_VIDEO_MODEL', config.DEFAULT_VIDEO_MODEL, video, 'video model');
}
