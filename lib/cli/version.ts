/** The version `waybill --version` prints: package.json's, read when asked. */
import { findPackage } from '../package-root';

export function packageVersion(from?: string): string {
  return findPackage(from).version;
}
