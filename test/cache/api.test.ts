/**
 * The cached-script resource over HTTP (`/v1/projects/{pid}/cache_scripts`): the real service,
 * scripts seeded straight into its database (tables of migration 0030), then listed in cursor
 * pages, read with their steps and versions, deleted, and refused (404 in the envelope) for an
 * unknown id or another project's script. A run key (not admin) may do all of it.
 */
import type pg from "pg"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import type { CachedStep } from "../../src/domain/cache-script.ts"
import { makeId } from "../../src/domain/ids.ts"
import { embeddedDatabaseClient, type Service, startService, stopAndClean } from "../support/service.ts"

let service: Service
let db: pg.Client
/** A run-scoped key of the project (the bootstrap key is an admin key). */
let runKey: string

const step = (tool: string, name: string, extra: Partial<CachedStep> = {}): CachedStep => ({
  tool,
  params: tool === "type" ? { text: "{{secret:site_password}}" } : {},
  target: { role: "button", name, containers: ["form"], ordinal: 0, css: "form > button" },
  to_target: null,
  expects: { url: "https://example.com/login", title: "Sign in" },
  output_on_page: [],
  ...extra
})

/** Inserts a script and its versions (each version's steps, oldest first); the current version is the last. */
const seed = async (options: {
  readonly projectId: string
  readonly at: number
  readonly instructions: string
  readonly versions: ReadonlyArray<{ readonly steps: ReadonlyArray<CachedStep>; readonly healed: number }>
  readonly hits?: number
  readonly heals?: number
  readonly lastUsed?: Date | null
}) => {
  const id = makeId("cs", options.at)
  const created = new Date(options.at)
  await db.query(
    `INSERT INTO cache_scripts (id, project_id, cache_key, instructions, start_origin, output_schema, version, hit_count, heal_count, last_used_at, created_at, updated_at)
     VALUES ($1, $2, $3, $4, $5, $6::jsonb, $7, $8, $9, $10, $11, $12)`,
    [id, options.projectId, `key-${id}`, options.instructions, "https://example.com", JSON.stringify({ type: "object" }),
      options.versions.length, options.hits ?? 0, options.heals ?? 0, options.lastUsed ?? null, created, new Date(options.at + options.versions.length * 1000)]
  )
  for (const [index, version] of options.versions.entries()) {
    await db.query(
      `INSERT INTO cache_script_versions (script_id, version, steps, source_run_id, healed_steps, created_at) VALUES ($1, $2, $3::jsonb, $4, $5, $6)`,
      [id, index + 1, JSON.stringify(version.steps), makeId("run", options.at + index), version.healed, new Date(options.at + (index + 1) * 1000)]
    )
  }
  return id
}

const base = Date.parse("2026-03-01T00:00:00Z")
const OTHER_PROJECT = "proj_00000000000000000000000000"
let ids: Array<string> = []
let healedId: string
let otherId: string

beforeAll(async () => {
  service = await startService()
  db = await embeddedDatabaseClient(service.dataDir)
  const key = await service.request("POST", `/v1/projects/${service.projectId}/api_keys`, { body: { name: "cache-scripts reader" } })
  expect(key.status, key.text).toBe(201)
  expect(key.json.scope).toBe("run")
  runKey = key.json.secret_token
  ids = []
  for (let i = 0; i < 4; i++) {
    ids.push(await seed({ projectId: service.projectId, at: base + i * 60_000, instructions: `task ${i}`, versions: [{ steps: [step("click", `Go ${i}`)], healed: 0 }] }))
  }
  healedId = await seed({
    projectId: service.projectId,
    at: base + 10 * 60_000,
    instructions: "sign in and read the balance",
    versions: [
      { steps: [step("click", "Sign in")], healed: 0 },
      { steps: [step("click", "Log in")], healed: 1 },
      { steps: [step("type", "Password"), step("done", "Balance", { target: null, output_on_page: ["42.00"] })], healed: 2 }
    ],
    hits: 7,
    heals: 2,
    lastUsed: new Date(base + 20 * 60_000)
  })
  ids.push(healedId)
  otherId = await seed({ projectId: OTHER_PROJECT, at: base + 30 * 60_000, instructions: "someone else's task", versions: [{ steps: [step("click", "Theirs")], healed: 0 }] })
}, 180_000)
afterAll(async () => {
  await db?.end()
  await stopAndClean(service)
})

const scriptsPath = () => `/v1/projects/${service.projectId}/cache_scripts`

const expectNotFound = (response: { status: number; json: any; text: string }, id: string) => {
  expect(response.status, response.text).toBe(404)
  expect(response.json).toMatchObject({ code: "cache_script_not_found", extra: { script_id: id } })
  expect(typeof response.json.detail).toBe("string")
}

describe("cache_scripts", () => {
  it("lists the project's scripts newest first in cursor pages, with current steps and no versions", async () => {
    const seen: Array<any> = []
    let cursor: string | null = null
    let pages = 0
    do {
      const query: string = cursor === null ? "?limit=2" : `?limit=2&cursor=${encodeURIComponent(cursor)}`
      const page = await service.request("GET", `${scriptsPath()}${query}`, { key: runKey })
      expect(page.status, page.text).toBe(200)
      expect(page.json.items.length).toBeLessThanOrEqual(2)
      seen.push(...page.json.items)
      cursor = page.json.next_cursor
      pages++
    } while (cursor !== null && pages < 10)
    expect(pages).toBe(3)
    expect(seen.map((item) => item.id)).toEqual([...ids].reverse())
    expect(seen.map((item) => item.id)).not.toContain(otherId)
    const healed = seen[0]
    expect(healed).not.toHaveProperty("versions")
    expect(healed).toMatchObject({
      id: healedId,
      instructions: "sign in and read the balance",
      start_origin: "https://example.com",
      output_schema: { type: "object" },
      version: 3,
      hit_count: 7,
      heal_count: 2,
      last_used_at: new Date(base + 20 * 60_000).toISOString(),
      created_at: new Date(base + 10 * 60_000).toISOString()
    })
    expect(healed.steps.map((s: any) => s.tool)).toEqual(["type", "done"])
    expect(seen[1].last_used_at).toBeNull()

    const bad = await service.request("GET", `${scriptsPath()}?cursor=not-a-cursor`, { key: runKey })
    expect(bad.status).toBe(400)
    expect(bad.json.code).toBeDefined()
  })

  it("gets a script with its current steps and its versions newest first", async () => {
    const response = await service.request("GET", `${scriptsPath()}/${healedId}`, { key: runKey })
    expect(response.status, response.text).toBe(200)
    const script = response.json
    expect(script.steps).toEqual([
      step("type", "Password"),
      step("done", "Balance", { target: null, output_on_page: ["42.00"] })
    ])
    expect(script.steps[0].params).toEqual({ text: "{{secret:site_password}}" })
    expect(script.versions.map((v: any) => v.version)).toEqual([3, 2, 1])
    expect(script.versions.map((v: any) => v.healed_steps)).toEqual([2, 1, 0])
    expect(script.versions[0]).toEqual({
      version: 3,
      source_run_id: expect.stringMatching(/^run_/),
      healed_steps: 2,
      created_at: new Date(base + 10 * 60_000 + 3000).toISOString()
    })
    expect(script.updated_at).toBe(new Date(base + 10 * 60_000 + 3000).toISOString())
  })

  it("404 cache_script_not_found for an unknown id and for another project's script", async () => {
    const unknown = makeId("cs")
    expectNotFound(await service.request("GET", `${scriptsPath()}/${unknown}`, { key: runKey }), unknown)
    expectNotFound(await service.request("DELETE", `${scriptsPath()}/${unknown}`, { key: runKey }), unknown)
    expectNotFound(await service.request("GET", `${scriptsPath()}/${otherId}`), otherId)
    expectNotFound(await service.request("DELETE", `${scriptsPath()}/${otherId}`), otherId)
    // Still there for its own project.
    const kept = await db.query("SELECT count(*)::int AS n FROM cache_scripts WHERE id = $1", [otherId])
    expect(kept.rows[0].n).toBe(1)
  })

  it("deletes a script with its versions; then it is 404", async () => {
    const deleted = await service.request("DELETE", `${scriptsPath()}/${healedId}`, { key: runKey })
    expect(deleted.status, deleted.text).toBe(204)
    expect(deleted.text).toBe("")
    expectNotFound(await service.request("GET", `${scriptsPath()}/${healedId}`, { key: runKey }), healedId)
    expectNotFound(await service.request("DELETE", `${scriptsPath()}/${healedId}`, { key: runKey }), healedId)
    const versions = await db.query("SELECT count(*)::int AS n FROM cache_script_versions WHERE script_id = $1", [healedId])
    expect(versions.rows[0].n).toBe(0)
    const listed = await service.request("GET", `${scriptsPath()}?limit=100`, { key: runKey })
    expect(listed.json.items.map((item: any) => item.id)).toEqual(ids.filter((id) => id !== healedId).reverse())
  })

  it("the OpenAPI document has the three operations", async () => {
    const doc = (await service.request("GET", "/openapi.json", { key: null })).json
    const list = "/v1/projects/{pid}/cache_scripts"
    const one = "/v1/projects/{pid}/cache_scripts/{script_id}"
    expect(Object.keys(doc.paths[list])).toContain("get")
    expect(Object.keys(doc.paths[one]).sort()).toEqual(expect.arrayContaining(["delete", "get"]))
    expect(doc.paths[one].delete.responses["204"]).toBeDefined()
  })
})
