export { Worker } from './loop';
export type { WorkerOptions } from './options';
