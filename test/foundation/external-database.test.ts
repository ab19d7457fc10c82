/**
 * The store suite: the service on its database, run once on the embedded PostgreSQL and once on an
 * external PostgreSQL (`DATABASE_URL` set to a fresh database on TEST_DATABASE_URL's server, when
 * that variable is set). Migrations, projects, keys and idempotency, and a restart that keeps the
 * data. With DATABASE_URL nothing is embedded: no cluster, no password file, no postmaster.
 */
import { existsSync, readdirSync, rmSync } from "node:fs"
import * as path from "node:path"
import pg from "pg"
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest"
import { migrationCount } from "../../src/store/migrations.ts"
import { livePostmaster } from "../support/processes.ts"
import { embeddedDatabaseClient, externalDatabase, newDataDir, type Service, startService, stopAndClean } from "../support/service.ts"

// Every test here spawns the service or the CLI (each a full Node start, some starting PostgreSQL);
// on a loaded CI machine that takes far longer than the default 60 s allows.
vi.setConfig({ testTimeout: 180_000 })

interface Backend {
  readonly name: string
  readonly available: boolean
  readonly external: boolean
  /** Environment for the service and the database URL to look behind the API (external only). */
  readonly setUp: () => Promise<{ env: Record<string, string>; url?: string; drop: () => Promise<void> }>
}

const backends: ReadonlyArray<Backend> = [
  {
    name: "embedded PostgreSQL",
    available: true,
    external: false,
    setUp: async () => ({ env: {}, drop: async () => {} })
  },
  {
    name: "external PostgreSQL (TEST_DATABASE_URL)",
    available: (process.env["TEST_DATABASE_URL"] ?? "") !== "",
    external: true,
    setUp: async () => {
      // Throws (the suite fails loudly) when the variable is set but the server does not answer.
      const database = await externalDatabase()
      if (database === undefined) throw new Error("TEST_DATABASE_URL is set but no database was created")
      return { env: { DATABASE_URL: database.url }, url: database.url, drop: database.drop }
    }
  }
]

for (const backend of backends) {
  describe.skipIf(!backend.available)(`store suite on ${backend.name}`, () => {
    let service: Service
    let setup: Awaited<ReturnType<Backend["setUp"]>>
    const extraDirs: Array<string> = []
    const external = () => backend.external

    /** A client on the service's database (the external one, or the data dir's embedded one). */
    const withDb = async <A>(use: (db: pg.Client) => Promise<A>): Promise<A> => {
      const db = setup.url !== undefined ? new pg.Client({ connectionString: setup.url }) : await embeddedDatabaseClient(service.dataDir)
      if (setup.url !== undefined) await db.connect()
      try {
        return await use(db)
      } finally {
        await db.end()
      }
    }
    const keysPath = (projectId = service.projectId) => `/v1/projects/${projectId}/api_keys`

    beforeAll(async () => {
      setup = await backend.setUp()
      service = await startService({ env: setup.env })
    })
    afterAll(async () => {
      await stopAndClean(service)
      for (const dir of extraDirs) rmSync(dir, { recursive: true, force: true })
      await setup?.drop()
    })

    it("starts, applies every migration once and is ready", async () => {
      expect((await service.request("GET", "/readyz", { key: null })).json).toEqual({ status: "ready" })
      const rows = await withDb((db) => db.query<{ migration_id: number; name: string }>("SELECT migration_id, name FROM wa_migrations ORDER BY migration_id"))
      expect(rows.rows.map((r) => Number(r.migration_id))).toEqual(Array.from({ length: migrationCount }, (_, i) => i + 1))
      for (const row of rows.rows) expect(row.name).toMatch(/\S/)
      // The bootstrap project and key are in this database.
      const projects = await withDb((db) => db.query("SELECT id FROM projects"))
      expect(projects.rows.map((r) => r.id)).toEqual([service.projectId])
    })

    it(backend.external ? "embeds nothing: no cluster, no password file, no postmaster" : "keeps its cluster in the data dir", async () => {
      if (external()) {
        expect(existsSync(path.join(service.dataDir, "postgres"))).toBe(false)
        expect(existsSync(path.join(service.dataDir, "postgres.password"))).toBe(false)
        expect(existsSync(path.join(service.dataDir, "postgres.location"))).toBe(false)
        expect(livePostmaster(service.dataDir)).toBeUndefined()
        expect(service.logs.some((line) => line.message === "embedded PostgreSQL ready")).toBe(false)
        // The service's sessions are on the external server.
        const sessions = await withDb((db) => db.query("SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND application_name = 'web-agent-service'"))
        expect(sessions.rows[0].n).toBeGreaterThan(0)
      } else {
        expect(existsSync(path.join(service.dataDir, "postgres", "PG_VERSION"))).toBe(true)
        expect(livePostmaster(service.dataDir)).toBeDefined()
      }
    })

    it("creates, lists, authenticates and revokes keys", async () => {
      const created = await service.request("POST", keysPath(), { body: { name: "store-key", scope: "admin" } })
      expect(created.status, created.text).toBe(201)
      const stored = await withDb((db) => db.query("SELECT project_id, name, secret_hash FROM api_keys WHERE id = $1", [created.json.id]))
      expect(stored.rows).toEqual([{ project_id: service.projectId, name: "store-key", secret_hash: expect.stringMatching(/^[0-9a-f]{64}$/) }])

      const listed = await service.request("GET", `${keysPath()}?limit=100`, { key: created.json.secret_token })
      expect(listed.status).toBe(200)
      expect(listed.json.items.map((k: any) => k.id)).toContain(created.json.id)
      expect(listed.json.total).toBe(listed.json.items.length)

      const revoked = await service.request("DELETE", `${keysPath()}/${created.json.id}`)
      expect(revoked.status).toBe(200)
      expect(revoked.json.grace_until).not.toBeNull()
      const row = await withDb((db) => db.query("SELECT disabled_at FROM api_keys WHERE id = $1", [created.json.id]))
      expect(row.rows[0].disabled_at).not.toBeNull()
    })

    it("the CLI writes projects and keys to the same database", async () => {
      const project = JSON.parse((await service.cli("projects", "create", "--name", "store-cli")).stdout)
      const key = JSON.parse((await service.cli("keys", "create", "--project", project.project_id)).stdout)
      const listed = await service.request("GET", keysPath(project.project_id), { key: key.secret_token })
      expect(listed.status, listed.text).toBe(200)
      expect(listed.json.items).toEqual([expect.objectContaining({ id: key.key_id })])
      const rows = await withDb((db) => db.query("SELECT id FROM projects WHERE id = $1", [project.project_id]))
      expect(rows.rows).toHaveLength(1)
      if (external()) expect(existsSync(path.join(service.dataDir, "postgres"))).toBe(false)
    })

    const idempotencyKey = crypto.randomUUID()
    let firstResponse: { status: number; json: any }

    it("replays an idempotent write, and refuses the same key with another body", async () => {
      const headers = { "idempotency-key": idempotencyKey }
      const first = await service.request("POST", keysPath(), { body: { name: "idem" }, headers })
      expect(first.status).toBe(201)
      // A replay is identical but for the secret, which exists only in the first response.
      firstResponse = { status: first.status, json: { ...first.json, secret_token: null } }
      const again = await service.request("POST", keysPath(), { body: { name: "idem" }, headers })
      expect(again.status).toBe(201)
      expect(again.json).toEqual(firstResponse.json)
      const other = await service.request("POST", keysPath(), { body: { name: "other" }, headers })
      expect(other.status).toBe(422)
      const count = await withDb((db) => db.query("SELECT count(*)::int AS n FROM api_keys WHERE name = 'idem'"))
      expect(count.rows[0].n).toBe(1)
    })

    it("keeps the data across a restart (and, for an external database, across data dirs)", async () => {
      const before = await service.request("GET", `${keysPath()}?limit=100`)
      expect(before.status).toBe(200)
      await service.stop()
      const credentials = { projectId: service.projectId, apiKey: service.apiKey }
      // With an external database the data dir holds nothing that matters: start on a new one.
      let dataDir = service.dataDir
      if (external()) {
        dataDir = newDataDir()
        extraDirs.push(dataDir)
      }
      service = await startService({ env: setup.env, dataDir, credentials })
      expect(service.logs.some((line) => line.annotations?.["bootstrap"] !== undefined)).toBe(false)
      expect((await service.request("GET", "/readyz", { key: null })).status).toBe(200)

      const after = await service.request("GET", `${keysPath()}?limit=100`)
      expect(after.status).toBe(200)
      expect(after.json.items.map((k: any) => k.id)).toEqual(before.json.items.map((k: any) => k.id))
      // The idempotency record survived too: the replay is identical.
      const replay = await service.request("POST", keysPath(), { body: { name: "idem" }, headers: { "idempotency-key": idempotencyKey } })
      expect({ status: replay.status, json: replay.json }).toEqual(firstResponse)
      // The migrations were not applied twice.
      const rows = await withDb((db) => db.query("SELECT count(*)::int AS n FROM wa_migrations"))
      expect(rows.rows[0].n).toBe(migrationCount)
      if (external()) expect(readdirSync(dataDir).filter((f) => f.startsWith("postgres"))).toEqual([])
    })
  })
}
