/**
 * Runs in flight per API key as well as per project (issue 25 item 7): one key may have at most
 * WA_MAX_CONCURRENT_RUNS_PER_KEY standalone runs under way, counted in the create's transaction
 * under the project's admission lock (429 too_many_concurrent_runs, `extra.scope: "key"`, with
 * Retry-After); the project's cap WA_MAX_CONCURRENT_RUNS still bounds all its keys together
 * (`scope: "project"`). Every run records the key that started it (runs.api_key_id).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { FAKE_KEYS, type FakeEngines, startFakeEngines } from "../fixtures/engines/fake-engines.ts"
import { embeddedDatabaseClient, type ApiResponse, type Service, startService, stopAndClean } from "../support/service.ts"

const PROJECT_CAP = 8
const KEY_CAP = 3
const BURST = 20
let engines: FakeEngines
let service: Service
const keys: Record<"a" | "b" | "c", { id: string; token: string }> = {} as never

beforeAll(async () => {
  engines = await startFakeEngines({
    results: (engine, query) => [{ title: `${engine} ${query}`, url: `https://${engine}.example/${encodeURIComponent(query)}`, snippet: "hit" }]
  })
  service = await startService({
    env: {
      WA_SEARXNG_URL: engines.url,
      WA_BRAVE_API_KEY: FAKE_KEYS.brave,
      WA_BRAVE_BASE_URL: engines.url,
      WA_GOOGLE_API_KEY: FAKE_KEYS.google,
      WA_GOOGLE_CX: FAKE_KEYS.googleCx,
      WA_GOOGLE_BASE_URL: engines.url,
      WA_ALLOW_PRIVATE_NETWORKS: "true",
      WA_SEARCH_ENGINE_TIMEOUT_MS: "120000",
      WA_MAX_CONCURRENT_RUNS: String(PROJECT_CAP),
      WA_MAX_CONCURRENT_RUNS_PER_KEY: String(KEY_CAP),
      WA_MAX_KEYS_PER_PROJECT: "10",
      WA_RATE_LIMIT_REQUESTS: "100000"
    }
  })
  for (const name of ["b", "c"] as const) {
    const made = await service.cli("keys", "create", "--project", service.projectId, "--name", name, "--scope", "run")
    expect(made.code, made.stderr).toBe(0)
    const key = JSON.parse(made.stdout)
    keys[name] = { id: key.key_id, token: key.secret_token }
  }
  const db = await embeddedDatabaseClient(service.dataDir)
  try {
    const [row] = (await db.query("SELECT id FROM api_keys WHERE project_id = $1 AND id <> ALL($2)", [service.projectId, [keys.b.id, keys.c.id]])).rows
    keys.a = { id: row.id, token: service.apiKey }
  } finally {
    await db.end()
  }
}, 300_000)
afterAll(async () => {
  await stopAndClean(service)
  await engines.close()
})

const runsPath = () => `/v1/projects/${service.projectId}/web_search/runs`
const burst = (who: "a" | "b" | "c") =>
  Promise.all(Array.from({ length: BURST }, (_, i) =>
    service.request("POST", runsPath(), { key: keys[who].token, body: { queries: [`per key ${who} ${i}`], engines: ["searxng"], wait: false } })))

const expectRefused = (responses: ReadonlyArray<ApiResponse>, scope: "key" | "project", limit: number) => {
  for (const response of responses) {
    expect(response.status, response.text).toBe(429)
    expect(response.json).toMatchObject({ code: "too_many_concurrent_runs", extra: { scope, limit, active: limit } })
    expect(Number(response.headers.get("retry-after"))).toBeGreaterThan(0)
  }
}

describe("runs in flight per key and per project", () => {
  it("two keys' concurrent bursts get the key cap each; a third key gets what is left of the project's cap", { timeout: 300_000 }, async () => {
    // The engine holds every search, so runs stay under way while the bursts are admitted.
    engines.setBehavior("searxng", { latencyMs: 60_000 })
    try {
      const [a, b] = await Promise.all([burst("a"), burst("b")])
      for (const [who, responses] of [["a", a], ["b", b]] as const) {
        const accepted = responses.filter((r) => r.status === 202)
        expect(accepted.length, `key ${who}: ${responses.map((r) => r.status).join(",")}`).toBe(KEY_CAP)
        expectRefused(responses.filter((r) => r.status !== 202), "key", KEY_CAP)
      }
      // 6 of the project's 8 are taken: the third key gets 2, then the project's cap answers.
      const c = await burst("c")
      const acceptedC = c.filter((r) => r.status === 202)
      expect(acceptedC.length, c.map((r) => r.status).join(",")).toBe(PROJECT_CAP - 2 * KEY_CAP)
      expectRefused(c.filter((r) => r.status !== 202), "project", PROJECT_CAP)

      // Only the admitted runs exist, each recording the key that started it.
      const db = await embeddedDatabaseClient(service.dataDir)
      try {
        const rows = (await db.query(
          "SELECT api_key_id, count(*)::int AS n FROM runs WHERE project_id = $1 AND request->'queries'->>0 LIKE 'per key %' GROUP BY api_key_id",
          [service.projectId]
        )).rows as Array<{ api_key_id: string; n: number }>
        expect(Object.fromEntries(rows.map((row) => [row.api_key_id, row.n]))).toEqual({
          [keys.a.id]: KEY_CAP,
          [keys.b.id]: KEY_CAP,
          [keys.c.id]: PROJECT_CAP - 2 * KEY_CAP
        })
      } finally {
        await db.end()
      }

      // A key at its cap that cancels a run gets its place back.
      const mine = a.find((r) => r.status === 202)!
      const canceled = await service.request("POST", `${runsPath()}/${mine.json.run_id}/cancel`, { key: keys.a.token, body: {} })
      expect(canceled.status, canceled.text).toBeLessThan(300)
      const again = await service.request("POST", runsPath(), { key: keys.a.token, body: { queries: ["per key a again"], engines: ["searxng"], wait: false } })
      expect(again.status, again.text).toBe(202)
    } finally {
      engines.setBehavior("searxng", {})
    }
  })
})
