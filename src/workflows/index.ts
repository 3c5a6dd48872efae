/** Workflow entry point bundled by the worker. Only deterministic workflow code may be imported here. */
export { render } from './render.ts';
export { retention } from './retention.ts';
export { webhook } from './webhook.ts';
