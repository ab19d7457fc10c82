/**
 * The process-level project's globalSetup: one data dir per `vitest run` whose embedded PostgreSQL
 * is initialised and migrated by the real `wa migrate` (so it has the schema, but no project and no
 * key yet). `startService` without a `dataDir` starts on a copy of it instead of an empty dir, so a
 * fresh service skips initdb and the migrations (about 1.5 s of CPU per start, over 60 starts a
 * run) and still does its own first start: the bootstrap project and key, the state key, the lock.
 *
 * The dir is handed to the test workers in WA_TEST_SEED_DATA_DIR (a WA_ name, so the harness never
 * passes it on to a service), and removed when the run ends. Made per run, never reused across
 * runs: a migration edited since the last run cannot leave a stale schema behind.
 */
import { rmSync } from "node:fs"
import { cleanEnv, runWa } from "./processes.ts"
import { newDataDir, SEED_DATA_DIR_VARIABLE } from "./service.ts"

export default async function setup() {
  const dir = newDataDir()
  const result = await runWa(["migrate"], cleanEnv(dir), 120_000)
  if (result.code !== 0) {
    rmSync(dir, { recursive: true, force: true })
    throw new Error(`wa migrate on the seed data dir failed (${result.code ?? result.signal}):\n${result.stderr}${result.stdout}`)
  }
  process.env[SEED_DATA_DIR_VARIABLE] = dir
  return () => {
    delete process.env[SEED_DATA_DIR_VARIABLE]
    rmSync(dir, { recursive: true, force: true })
  }
}
