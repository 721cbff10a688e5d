/** The types of http-guard.mjs (plain JavaScript, loaded into Next's own process), for the tests that call it. */
import type { ServerResponse } from 'node:http';

export interface Refusal {
  status: number;
  api: boolean;
  headers?: Record<string, string>;
  code: string;
  message: string;
  [more: string]: unknown;
}

export const ALLOWED_METHODS: string[];
export function refusal(
  method: string,
  url: string | undefined,
  contentLength: string | undefined,
  maxBodyBytes: number,
  gatewayMaxBodyBytes?: number,
  apiMaxBodyBytes?: number,
): Refusal | null;
export function send(res: ServerResponse, r: Refusal): void;
export function install(maxBodyBytes: number, gatewayMaxBodyBytes?: number, apiMaxBodyBytes?: number): void;
