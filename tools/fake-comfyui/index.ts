/** The fake ComfyUI: importable server, fixture loader and the types tests need. */
export { startFakeComfyUI } from './server.ts';
export type { FakeComfyUI, FakeComfyUIOptions } from './server.ts';
export { loadObjectInfoFixture, loadRawObjectInfo, OBJECT_INFO_FIXTURE_URL } from './fixture.ts';
export type { RawObjectInfo } from './node-schema.ts';
export { faultsBodySchema } from './faults.ts';
export type { FaultsBody, FaultState } from './faults.ts';
export type { FakeStats } from './executor.ts';
export type { FakeState, FakeStatsSnapshot } from './state.ts';
export { readTextChunks, readImageHeader } from './png.ts';
