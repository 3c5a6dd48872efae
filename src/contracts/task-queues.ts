/**
 * The shared GPU task queue of a deployment: every GPU worker polls it with one slot per healthy ComfyUI
 * (backends/gpu-pool.ts), so the GPU that becomes free takes the next prompt. Derived from the workflow
 * queue so the workflow, the workers and the docs agree without another setting.
 */
export function gpuTaskQueue(taskQueue: string): string {
  return `${taskQueue}-gpu`;
}

/**
 * The webhook task queue: deliveries run here, on general (not GPU) workers with a few slots of their own, so a
 * slow or dead receiver never holds a GPU slot, nor the slots that stop prompts.
 */
export function webhookTaskQueue(taskQueue: string): string {
  return `${taskQueue}-webhooks`;
}
