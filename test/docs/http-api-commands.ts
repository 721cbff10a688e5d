import type { Handler } from './here';

export const httpApi: Record<string, Handler> = {};
