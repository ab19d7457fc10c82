/**
 * The process-level project's globalSetup for the run's seed data dir (service.ts `seededDataDir`):
 * it only names an empty dir for it in WA_TEST_SEED_DATA_DIR (a WA_ name, so the harness never
 * passes it on to a service). The first `startService` of the run makes the seed there (a run of
 * unit-test files never pays for it); the teardown waits for a seed still being made, then removes
 * the dir. Made per run, never reused across runs: a migration edited since the last run cannot
 * leave a stale schema behind.
 */
import { chmodSync, existsSync, rmSync } from "node:fs"
import * as path from "node:path"
import { newDataDir, SEED_DATA_DIR_VARIABLE, SEED_FAILED, SEED_LOCK, SEED_READY } from "./service.ts"

export default function setup() {
  const base = newDataDir()
  // Run as root, the embedded cluster lives in the data dir only when the `postgres` user can reach
  // it (embedded-postgres.ts); otherwise it goes elsewhere and a copy of the seed would share it.
  chmodSync(base, 0o755)
  process.env[SEED_DATA_DIR_VARIABLE] = base
  return async () => {
    const settled = () => !existsSync(path.join(base, SEED_LOCK)) || existsSync(path.join(base, SEED_READY)) || existsSync(path.join(base, SEED_FAILED))
    for (const deadline = Date.now() + 120_000; !settled() && Date.now() < deadline;) await new Promise((resolve) => setTimeout(resolve, 100))
    delete process.env[SEED_DATA_DIR_VARIABLE]
    rmSync(base, { recursive: true, force: true })
  }
}
