/**
 * JSON request shapes for the fuzzer: an A1111, video or OpenAI-image body that would render cheaply, with
 * fields set to values of the wrong type, out of range, huge, deeply nested or named after prototype keys.
 */
import fc from 'fast-check';
import { APPLIED_FIELDS, NO_EFFECT_FIELDS, UNAPPLIED_FIELDS } from '../../../src/api/a1111/unapplied.ts';

export const WEIRD_KEYS = ['__proto__', 'constructor', 'prototype', 'toString', 'valueOf', 'hasOwnProperty', 'isPrototypeOf', '__defineGetter__'];

export const weirdValue: fc.Arbitrary<unknown> = fc.oneof(
  fc.constantFrom(
    null,
    true,
    false,
    0,
    -1,
    1e308,
    -1e308,
    2 ** 53,
    2 ** 64,
    0.5,
    -0.0,
    '',
    ' ',
    'NaN',
    'Infinity',
    '-1',
    '1e9',
    '0x10',
    '७',
    '\u0000',
    '😀',
    '\u202e',
    'auto',
  ),
  fc.integer(),
  fc.double(),
  fc.string({ maxLength: 40 }),
  fc.array(fc.oneof(fc.integer(), fc.string({ maxLength: 8 })), { maxLength: 3 }),
  fc.dictionary(fc.oneof(fc.string({ maxLength: 6 }), fc.constantFrom(...WEIRD_KEYS)), fc.oneof(fc.integer(), fc.string({ maxLength: 8 })), { maxKeys: 3 }),
  fc.integer({ min: 1_000, max: 20_000 }).map((n) => '9'.repeat(n)),
  fc.integer({ min: 1_000, max: 20_000 }).map((n) => `${'1'.repeat(n)}.5e`),
);

/** Large but legal-looking JSON: long arrays of small values, many keys, deep nesting. */
export const bulkValue: fc.Arbitrary<unknown> = fc.oneof(
  fc.integer({ min: 1_000, max: 200_000 }).map((n) => new Array<number>(n).fill(0)),
  fc.integer({ min: 1_000, max: 50_000 }).map((n) => Object.fromEntries(Array.from({ length: n }, (_, i) => [`k${i}`, i]))),
  fc.integer({ min: 50, max: 1_500 }).map((depth) => {
    let v: unknown = 1;
    for (let i = 0; i < depth; i++) v = { a: [v] };
    return v;
  }),
);

/** Overwrites `count` fields of `base` with arbitrary values from `fields`. */
export function mutated(base: Record<string, unknown>, fields: readonly string[], values: fc.Arbitrary<unknown>): fc.Arbitrary<Record<string, unknown>> {
  return fc.dictionary(fc.constantFrom(...fields), values, { minKeys: 1, maxKeys: 4 }).map((patch) => ({ ...base, ...patch }));
}

/**
 * Every A1111 body field the service classifies (applied, without effect, or accepted but not applied: a unit
 * test holds that classification to the whole request schema), plus the `priority` extension.
 */
export const A1111_FIELDS: readonly string[] = [
  ...new Set([...Object.values(APPLIED_FIELDS).flat(), ...NO_EFFECT_FIELDS, ...Object.keys(UNAPPLIED_FIELDS), 'priority']),
];

export const VIDEO_FIELDS = [
  'model',
  'prompt',
  'negative_prompt',
  'seed',
  'size',
  'width',
  'height',
  'seconds',
  'num_frames',
  'fps',
  'num_inference_steps',
  'guidance_scale',
  'flow_shift',
  'input_reference',
  'input_references',
  'extra_params',
  'user',
  'priority',
] as const;

export const OPENAI_IMAGE_FIELDS = [
  'model',
  'prompt',
  'n',
  'size',
  'response_format',
  'seed',
  'negative_prompt',
  'steps',
  'guidance',
  'cfg_scale',
  'quality',
  'style',
  'user',
  'background',
  'output_format',
  'output_compression',
  'moderation',
] as const;

export const OPTION_KEYS = [
  'sd_model_checkpoint',
  'jpeg_quality',
  'samples_format',
  'webp_lossless',
  'CLIP_stop_at_last_layers',
  'sd_vae',
  'eta_noise_seed_delta',
  'export_for_4chan',
  'img2img_fix_steps',
  ...WEIRD_KEYS,
] as const;
