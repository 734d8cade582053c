import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The project root: the nearest folder above this file that holds k8s/kustomization.yaml. */
export function findRoot(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (;;) {
    if (existsSync(join(dir, 'k8s', 'kustomization.yaml'))) return dir;
    const up = dirname(dir);
    if (up === dir) throw new Error('k8s/kustomization.yaml not found above the test file');
    dir = up;
  }
}
