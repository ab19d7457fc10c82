/**
 * The `wa` command line against a real data dir: project and key creation while the service runs
 * (same database, the key works at once) and while it is stopped (the key works after the next
 * start), errors, migrations, configuration validation and the one-service-per-data-dir lock.
 */
import { existsSync, readdirSync, rmSync } from "node:fs"
import * as path from "node:path"
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest"
import { embeddedDatabaseClient, newDataDir, type Service, startService, stopAndClean } from "../support/service.ts"
import { cleanEnv, livePostmaster, runWa } from "../support/processes.ts"

// Every test here spawns the service or the CLI (each a full Node start, some starting PostgreSQL);
// on a loaded CI machine that takes far longer than the default 60 s allows.
vi.setConfig({ testTimeout: 180_000 })

let service: Service
const cleanup: Array<string> = []

beforeAll(async () => {
  service = await startService()
})
afterAll(async () => {
  await stopAndClean(service)
  for (const dir of cleanup) rmSync(dir, { recursive: true, force: true })
})

const json = (result: { stdout: string; stderr: string; code: number }) => {
  expect(result.code, result.stderr).toBe(0)
  const lines = result.stdout.trim().split("\n")
  expect(lines, result.stdout).toHaveLength(1)
  return JSON.parse(lines[0]!)
}

const listKeys = (projectId: string, key: string) => service.request("GET", `/v1/projects/${projectId}/api_keys?limit=100`, { key })

describe("while the service runs", () => {
  it("projects create and keys create use its database; the new key works at once", async () => {
    const project = json(await service.cli("projects", "create", "--name", "cli-live"))
    expect(project).toEqual({ project_id: expect.stringMatching(/^proj_/), name: "cli-live" })

    const key = json(await service.cli("keys", "create", "--project", project.project_id, "--name", "live-key"))
    expect(key).toEqual({ project_id: project.project_id, key_id: expect.stringMatching(/^key_/), scope: "admin", secret_token: expect.stringMatching(/^wa_[0-9A-Za-z]{28,}$/) })

    const listed = await listKeys(project.project_id, key.secret_token)
    expect(listed.status, listed.text).toBe(200)
    expect(listed.json.items).toEqual([expect.objectContaining({ id: key.key_id, project_id: project.project_id, name: "live-key" })])
    // Scoped to its own project.
    expect((await listKeys(service.projectId, key.secret_token)).status).toBe(403)

    // A key for the default project, without a name.
    const unnamed = json(await service.cli("keys", "create", "--project", service.projectId))
    const mine = await listKeys(service.projectId, unnamed.secret_token)
    expect(mine.status).toBe(200)
    expect(mine.json.items).toContainEqual(expect.objectContaining({ id: unnamed.key_id, name: null }))
    // The CLI left the service's database running.
    expect(livePostmaster(service.dataDir)).toBeDefined()
    expect((await service.request("GET", "/readyz", { key: null })).status).toBe(200)
  })

  // Both tests below look at the same command's result: run it once.
  let unknownProject: ReturnType<Service["cli"]> | undefined
  const keysCreateUnknown = () => (unknownProject ??= service.cli("keys", "create", "--project", "proj_unknown"))

  it("keys create for an unknown project fails with a non-zero exit and prints no key", async () => {
    const result = await keysCreateUnknown()
    expect(result.code).not.toBe(0)
    expect(result.stdout).not.toContain("wa_")
    expect(result.stdout + result.stderr).toContain("proj_unknown")
  })

  // Product bug: the failure is reported by NodeRuntime.runMain's default error reporting, which
  // logs through the default logger to stdout (src/main.ts, `Effect.die(new CommandFailed(...))`),
  // so stdout (the JSON channel) carries a stack trace and stderr is empty.
  it("keys create for an unknown project reports the error on stderr, not on stdout", async () => {
    const result = await keysCreateUnknown()
    expect(result.code).not.toBe(0)
    expect(result.stderr).toContain("proj_unknown")
    expect(result.stdout).toBe("")
  })

  it("usage errors exit non-zero", async () => {
    expect((await service.cli("projects", "create")).code).not.toBe(0)
    expect((await service.cli("keys", "create")).code).not.toBe(0)
    expect((await service.cli("frobnicate")).code).not.toBe(0)
  })

  it("migrate succeeds and is idempotent; wa_migrations has every migration once", async () => {
    const db = await embeddedDatabaseClient(service.dataDir)
    try {
      const before = await db.query("SELECT migration_id FROM wa_migrations ORDER BY migration_id")
      expect(before.rows.length).toBeGreaterThan(0)
      expect(json(await service.cli("migrate"))).toEqual({ migrated: true })
      expect(json(await service.cli("migrate"))).toEqual({ migrated: true })
      const after = await db.query("SELECT migration_id FROM wa_migrations ORDER BY migration_id")
      expect(after.rows).toEqual(before.rows)
    } finally {
      await db.end()
    }
  })

  it("a second serve on the same data dir refuses to start and the first keeps serving", async () => {
    const second = await runWa(["serve"], cleanEnv(service.dataDir))
    expect(second.signal, "the second serve did not exit by itself").toBeNull()
    expect(second.code).not.toBe(0)
    expect(second.stderr + second.stdout).toMatch(/another service/)
    // The first one is untouched: it answers, its database runs, its lock is its own.
    expect(service.process.exitCode).toBeNull()
    expect((await service.request("GET", "/readyz", { key: null })).status).toBe(200)
    expect((await listKeys(service.projectId, service.apiKey)).status).toBe(200)
    expect(livePostmaster(service.dataDir)).toBeDefined()
  })
})

describe("while the service is stopped", () => {
  it("keys and projects created offline work after the next start on the same data dir", async () => {
    await service.stop()
    expect(livePostmaster(service.dataDir)).toBeUndefined()

    const project = json(await service.cli("projects", "create", "--name", "cli-offline"))
    const key = json(await service.cli("keys", "create", "--project", project.project_id, "--name", "offline-key"))
    const defaultKey = json(await service.cli("keys", "create", "--project", service.projectId, "--name", "offline-default"))
    expect(json(await service.cli("migrate"))).toEqual({ migrated: true })
    expect((await service.cli("keys", "create", "--project", "proj_unknown")).code).not.toBe(0)
    // Each command, failed ones included, started the embedded database itself and stopped it again.
    expect(livePostmaster(service.dataDir)).toBeUndefined()

    service = await startService({ dataDir: service.dataDir, credentials: { projectId: service.projectId, apiKey: service.apiKey } })
    const listed = await listKeys(project.project_id, key.secret_token)
    expect(listed.status, listed.text).toBe(200)
    expect(listed.json.items).toEqual([expect.objectContaining({ id: key.key_id, name: "offline-key" })])
    const viaDefault = await listKeys(service.projectId, defaultKey.secret_token)
    expect(viaDefault.status).toBe(200)
    expect(viaDefault.json.items).toContainEqual(expect.objectContaining({ id: defaultKey.key_id }))
    // Not a first start: no new bootstrap key.
    expect(service.logs.some((line) => line.annotations?.["bootstrap"] !== undefined)).toBe(false)
  })
})

// Run one after the other: each case is a CPU-bound Node start, and side by side on two cores they
// only slowed the file running in the other worker (measured: no net gain).
describe("configuration errors", () => {
  const bad: ReadonlyArray<readonly [string, string]> = [
    ["WA_PORT", "abc"],
    ["WA_PORT", "70000"],
    ["WA_ALLOW_PRIVATE_NETWORKS", "maybe"],
    ["WA_RATE_LIMIT_REQUESTS", "0"],
    ["WA_RATE_LIMIT_WINDOW_SECONDS", "soon"],
    ["WA_LOG_LEVEL", "Loud"],
    ["WA_MODEL_PROVIDER", "oracle"]
  ]
  for (const [name, value] of bad) {
    it(`serve with ${name}=${value} exits 2 with one line on stderr naming the variable`, async () => {
      const dataDir = newDataDir()
      cleanup.push(dataDir)
      const result = await runWa(["serve"], cleanEnv(dataDir, { [name]: value }))
      expect(result.signal, "serve did not exit by itself").toBeNull()
      expect(result.code).toBe(2)
      const lines = result.stderr.split("\n").filter((line) => line.trim() !== "")
      expect(lines, result.stderr).toHaveLength(1)
      expect(lines[0]).toContain(name)
      expect(result.stdout).toBe("")
      // Nothing was started: no database in the data dir.
      expect(readdirSync(dataDir)).toEqual([])
      expect(existsSync(path.join(dataDir, "postgres"))).toBe(false)
    })
  }
})
