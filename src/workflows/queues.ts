/**
 * The shared GPU task queue of a deployment: every GPU worker polls it with one slot per healthy ComfyUI
 * (backends/gpu-pool.ts), so the GPU that becomes free takes the next prompt. Derived from the workflow
 * queue so the workflow, the workers and the docs agree without another setting.
 */
export function gpuTaskQueue(taskQueue: string): string {
  return `${taskQueue}-gpu`;
}
