/**
 * The upgrade suite (issue 26 §2: "existing databases migrate forward with no manual step"): a
 * database an older main wrote through its API upgrades by itself, and everything in it is served
 * as before.
 *
 * A fixture (test/fixtures/upgrade/<commit>.*, made by make-dump.ts) is a plain SQL dump of a
 * database that old service wrote, with the answers it gave. The dump is loaded into a fresh
 * database (a fresh one on TEST_DATABASE_URL when set, else an embedded PostgreSQL of the test's
 * own); today's service starts on it with no step in between and must: be ready with every
 * migration applied; have the schema a fresh `wa migrate` makes (columns, defaults, constraints,
 * indexes, views, the record of migrations: so what every other test does on a fresh database it
 * does on this one); answer every GET the old service answered with the same fields and values
 * (fields added since are allowed; what changed by design is listed in fixture.ts
 * `changedByDesign`, with its commit); stream the same events; accept the same keys (the revoked
 * one still refused) and the same console password; and run new work on the old rows: a run in
 * the old DoAnything session, the paused session schedule resumed and triggered, the paused
 * monitor refined, resumed and ticked (numbered after its old ticks), a WebSearch run, a
 * DeepResearch follow-up on the old report, a file in the old workspace, charged on the old ledger.
 */
import { createServer, type Server } from "node:http"
import { readFileSync, rmSync } from "node:fs"
import { gunzipSync } from "node:zlib"
import pg from "pg"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { migrationCount } from "../../src/store/migrations.ts"
import { FAKE_KEYS, type FakeEngines, startFakeEngines } from "../fixtures/engines/fake-engines.ts"
import { classify, researchScript } from "../fixtures/model/research-model.ts"
import { type ScriptedModel, startScriptedModel } from "../fixtures/model/scripted-model.ts"
import { type ResearchWeb, startResearchWeb } from "../fixtures/sites/research-web.ts"
import { listenOnLoopback } from "../support/listen.ts"
import { eventually } from "../support/runs.ts"
import { readSse } from "../support/sse.ts"
import { cleanEnv, runWa } from "../support/processes.ts"
import { freshDatabase, newDataDir, type Service, startService } from "../support/service.ts"
import { carriedOver, changedByDesign, changedByTime, type Fixture, loadFixture } from "./fixture.ts"

/**
 * The suite for the fixture of `commit`: load its dump, start today's service on it, compare, run
 * new work. One per test file (test/upgrade/from-*.test.ts), so each fixture runs in its own worker.
 */
export const upgradeSuite = (commit: string) => {
  const fixture: Fixture = loadFixture(commit)
  const pid = fixture.project_id
  const ids = fixture.ids
  /** What may differ: by design since the fixture's commit, or because time has passed since it was made. */
  const changes = [...changedByDesign, ...changedByTime(fixture, new Date())]

  let database: { url: string; drop: () => Promise<void> }
  let service: Service | undefined
  let model: ScriptedModel
  let engines: FakeEngines
  let web: ResearchWeb
  let pages: Server
  let pagesUrl: string

  const query = async <A = any>(text: string, url = database.url): Promise<Array<A>> => {
    const client = new pg.Client({ connectionString: url })
    await client.connect()
    try {
      return (await client.query(text)).rows
    } finally {
      await client.end()
    }
  }

  beforeAll(async () => {
    pages = createServer((request, response) => {
      const text = request.url === "/stock" ? "In stock: 2" : "Widget shop. The blue widget costs 12 dollars."
      response.writeHead(200, { "content-type": "text/html; charset=utf-8" })
      response.end(`<!doctype html><html><head><title>Fixture</title></head><body><main><h1>Widget</h1><p>${text}</p></main></body></html>`)
    })
    pagesUrl = (await listenOnLoopback(pages)).url
    web = await startResearchWeb()
    const table: Record<string, ReadonlyArray<string>> = { "widget upkeep": [web.url("127.0.0.2", "/doc/upkeep"), web.url("127.0.0.3", "/doc/repairs")] }
    engines = await startFakeEngines({
      results: (engine, query) => {
        const bare = query.split(/\s+/).filter((token) => token !== "" && !token.includes("site:") && token !== "OR").join(" ")
        const listed = table[bare]
        if (listed !== undefined) return listed.map((url, i) => ({ title: `Hit ${i + 1} for ${bare}`, url, snippet: `A result about ${bare}` }))
        return [{ title: `${engine} result for ${query}`, url: `https://${engine}.example/${encodeURIComponent(query)}`, snippet: `About ${query}` }]
      }
    })
    const research = researchScript({ sections: [{ title: "Upkeep", queries: ["widget upkeep"] }] })
    model = await startScriptedModel(async (request, turn) => {
      if (classify(request).kind !== "other") return research(request, turn)
      if (request.tools === undefined) return { text: JSON.stringify({ title: "Widget" }) }
      const target = JSON.stringify(request.messages).match(/(http:\/\/127\.0\.0\.1:\d+\/shop)/)?.[1]
      if (request.messages.every((message) => message.role !== "tool") && target !== undefined) return { tool: "navigate", args: { url: target } }
      return { tool: "done", args: { output: { title: "Widget", price: "12 dollars" } } }
    })

    database = await freshDatabase("upgrade")
    // The old service's database as it was: schema, rows and its own record of applied migrations.
    await query(gunzipSync(readFileSync(fixture.dumpPath)).toString("utf8"))
  }, 120_000)

  afterAll(async () => {
    await service?.stop()
    await database?.drop()
    await model?.close()
    await engines?.close()
    await web?.close()
    await new Promise((resolve) => pages?.close(resolve))
  })

  const start = () =>
    startService({
      env: {
        DATABASE_URL: database.url,
        WA_MODEL_BASE_URL: model.baseUrl,
        WA_MODEL: "scripted",
        WA_ALLOW_PRIVATE_NETWORKS: "true",
        WA_MAX_CONCURRENT_SESSIONS: "100",
        WA_SEARXNG_URL: engines.url,
        WA_BRAVE_API_KEY: FAKE_KEYS.brave,
        WA_BRAVE_BASE_URL: engines.url,
        WA_DUCKDUCKGO_BASE_URL: engines.url,
        WA_WEB_SEARCH_WAIT_SECONDS: "20",
        WA_WEBHOOK_RETRY_BASE_MS: "100",
        WA_SECRET_KEY: fixture.secret_key,
        WA_SESSION_IDLE_SECONDS: "86400",
        WA_BILLING: "on",
        WA_DRAIN_SECONDS: "1",
        WA_RATE_LIMIT_REQUESTS: "100000"
      },
      credentials: { projectId: pid, apiKey: fixture.keys.bootstrap }
    })

  const terminal = (status: string) => ["done", "succeeded", "failed", "canceled", "skipped"].includes(status)
  const ok = async (method: string, pathname: string, body?: unknown) => {
    const response = await service!.request(method, pathname, body === undefined ? {} : { body })
    expect(response.status, `${method} ${pathname}: ${response.text}`).toBeLessThan(300)
    return response.json
  }
  const untilTerminal = (pathname: string) =>
    eventually(`${pathname} to end`, async () => {
      const run = (await service!.request("GET", pathname)).json
      return terminal(run.status) ? run : undefined
    }, { timeoutMs: 120_000 })

  describe(`upgrade from the database of ${commit}`, () => {
    it("starts on the database without a manual step and applies every migration", async () => {
      expect((await query("SELECT count(*)::int AS n FROM wa_migrations"))[0].n).toBe(fixture.migrations_applied)
      expect(fixture.migrations_applied).toBeLessThan(migrationCount)
      service = await start()
      const ready = await service.request("GET", "/readyz", { key: null })
      expect(ready.status, ready.text).toBe(200)
      const applied = await query<{ n: number; max: number }>("SELECT count(*)::int AS n, max(migration_id)::int AS max FROM wa_migrations")
      expect(applied[0]).toEqual({ n: migrationCount, max: migrationCount })
    }, 120_000)

    it("has the schema a fresh database migrated by today's service has", async () => {
      // A database beside it on the same server, made by today's `wa migrate` from nothing.
      const name = `wa_upgrade_reference_${Date.now()}`
      await query(`CREATE DATABASE ${name}`)
      const referenceUrl = (() => {
        const url = new URL(database.url)
        url.pathname = `/${name}`
        return url.toString()
      })()
      const dataDir = newDataDir()
      try {
        const migrated = await runWa(["migrate"], cleanEnv(dataDir, { DATABASE_URL: referenceUrl }), 120_000)
        expect(migrated.code, migrated.stderr + migrated.stdout).toBe(0)
        // The application's tables (the cluster's own are made and migrated by the cluster at start).
        const schemaOf = async (url: string) => ({
          columns: await query(`
            SELECT table_name, column_name, data_type, is_nullable, column_default FROM information_schema.columns
            WHERE table_schema = 'public' AND table_name NOT LIKE 'cluster_%' ORDER BY table_name, column_name`, url),
          constraints: await query(`
            SELECT conrelid::regclass::text AS table_name, conname, pg_get_constraintdef(c.oid) AS definition
            FROM pg_constraint c JOIN pg_namespace n ON n.oid = c.connamespace
            WHERE n.nspname = 'public' AND conrelid::regclass::text NOT LIKE 'cluster_%' ORDER BY 1, 2, 3`, url),
          indexes: await query(`
            SELECT tablename, indexname, indexdef FROM pg_indexes WHERE schemaname = 'public' AND tablename NOT LIKE 'cluster_%' ORDER BY 1, 2`, url),
          views: await query(`SELECT table_name, view_definition FROM information_schema.views WHERE table_schema = 'public' ORDER BY 1`, url),
          migrations: await query(`SELECT migration_id, name FROM wa_migrations ORDER BY 1`, url)
        })
        const [upgraded, reference] = [await schemaOf(database.url), await schemaOf(referenceUrl)]
        expect(upgraded.migrations).toEqual(reference.migrations)
        expect(upgraded.columns).toEqual(reference.columns)
        expect(upgraded.constraints).toEqual(reference.constraints)
        expect(upgraded.indexes).toEqual(reference.indexes)
        expect(upgraded.views).toEqual(reference.views)
      } finally {
        await query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)
        rmSync(dataDir, { recursive: true, force: true })
      }
    }, 180_000)

    it("answers every GET the old service answered with the same fields and values", async () => {
      const login = await service!.request("POST", "/v1/auth/login", {
        body: { email: fixture.console.email, password: fixture.console.password, session: "bearer" },
        key: null
      })
      expect(login.status, login.text).toBe(200)
      const consoleToken: string = login.json.session_token
      const differences: Array<string> = []
      for (const [pathname, before] of Object.entries(fixture.answers)) {
        const key = pathname.startsWith("/v1/auth/") || pathname.startsWith("/v1/tenants") ? consoleToken : undefined
        const response = await service!.request("GET", pathname, key === undefined ? {} : { key })
        const raw = before as { status?: number; text?: string }
        if (typeof raw.status === "number" && typeof raw.text === "string" && Object.keys(raw).length === 2) {
          // A raw body (a file, an artifact): the same status and bytes.
          if (response.status !== raw.status || response.text !== raw.text) differences.push(`${pathname}: ${response.status} ${response.text.slice(0, 200)}`)
          continue
        }
        if (response.status !== 200) {
          differences.push(`${pathname}: ${response.status} ${response.text.slice(0, 300)}`)
          continue
        }
        differences.push(...carriedOver(before, response.json, pathname, changes))
      }
      for (const [pathname, before] of Object.entries(fixture.downloads)) {
        const file = await service!.request("GET", pathname)
        const download = await fetch(new URL(file.json.download_url, service!.url))
        const text = await download.text()
        if (download.status !== before.status || text !== before.text) differences.push(`download of ${pathname}: ${download.status} ${text.slice(0, 200)}`)
      }
      expect(Object.keys(fixture.downloads).length).toBeGreaterThan(0)
      expect(differences).toEqual([])
    }, 120_000)

    it("streams the same events of every run and of the monitor", async () => {
      const differences: Array<string> = []
      for (const [pathname, before] of Object.entries(fixture.streams)) {
        const expected = before as Array<{ id: number; event: string; data: unknown }>
        const stream = await readSse(`${service!.url}${pathname}`, { authorization: `Bearer ${fixture.keys.bootstrap}` }, {
          timeoutMs: 20_000,
          stopAfter: (events) => events.filter((event) => event.event !== "stream.heartbeat").length >= expected.length
        })
        const events = stream.events.filter((event) => event.event !== "stream.heartbeat")
        expect(events.map((event) => [event.id, event.event]), pathname).toEqual(expected.map((event) => [event.id, event.event]))
        events.forEach((event, i) => differences.push(...carriedOver(expected[i]!.data, event.data, `${pathname}#${event.id}`, changes)))
      }
      expect(differences).toEqual([])
    }, 120_000)

    it("takes the same API keys: admin and run keys work with their scopes, the revoked key stays refused", async () => {
      const keysPath = `/v1/projects/${pid}/api_keys`
      for (const key of [fixture.keys.bootstrap, fixture.keys.admin]) expect((await service!.request("GET", keysPath, { key })).status).toBe(200)
      expect((await service!.request("GET", keysPath, { key: fixture.keys.run })).status).toBe(403)
      expect((await service!.request("GET", `/v1/projects/${pid}/do_anything/sessions`, { key: fixture.keys.run })).status).toBe(200)
      expect((await service!.request("GET", `/v1/projects/${pid}/do_anything/sessions`, { key: fixture.keys.revoked })).status).toBe(401)
      expect((await service!.request("GET", `/v1/projects/${pid}/do_anything/sessions`, { key: `${fixture.keys.run}x` })).status).toBe(401)
      // A key made today sits next to them.
      const made = await ok("POST", keysPath, { name: "after the upgrade", scope: "run" })
      expect((await service!.request("GET", `/v1/projects/${pid}/do_anything/sessions`, { key: made.secret_token })).status).toBe(200)
    }, 60_000)

    it("runs new work on the old rows", async () => {
      const balanceBefore = Number((await ok("GET", `/v1/projects/${pid}/billing/account`)).credit_balance_usd)
      // DoAnything: a new run in the session the old service made; it finishes, after the old two.
      const sessionPath = `/v1/projects/${pid}/do_anything/sessions/${ids.session}`
      const added = await ok("POST", `${sessionPath}/runs`, { instructions: `Check the price once more on ${pagesUrl}/shop` })
      const addedId: string = added.id ?? added.run_id
      expect(addedId > ids.run2!).toBe(true)
      const run = await untilTerminal(`${sessionPath}/runs/${addedId}`)
      expect(run.status, JSON.stringify(run)).toBe("done")
      expect(run.output).toEqual({ title: "Widget", price: "12 dollars" })
      expect((await ok("GET", sessionPath)).latest_run_id).toBe(addedId)

      // The paused session schedule resumes and a trigger runs in its session.
      const schedulePath = `/v1/projects/${pid}/schedules/${ids.schedule}`
      await ok("POST", `${schedulePath}/resume`)
      expect((await ok("GET", schedulePath)).paused).toBe(false)
      await ok("POST", `${schedulePath}/trigger`, {})
      const scheduledPath = `/v1/projects/${pid}/do_anything/sessions/${ids.scheduledSession}`
      const before = (fixture.answers[scheduledPath] as { latest_run_id: string }).latest_run_id
      const fired = await eventually("the triggered run", async () => {
        const session = (await service!.request("GET", scheduledPath)).json
        return session.latest_run_id !== before ? session.latest_run_id as string : undefined
      }, { timeoutMs: 60_000 })
      expect((await untilTerminal(`${scheduledPath}/runs/${fired}`)).status).toBe("done")

      // Track: the paused monitor resumes, reads today's page, and numbers its tick after the old ones.
      const monitorPath = `/v1/projects/${pid}/track/monitors/${ids.monitor}`
      expect((await ok("PATCH", monitorPath, { action: "refine", patch: { target_urls: [`${pagesUrl}/stock`] } })).target_urls).toEqual([`${pagesUrl}/stock`])
      expect((await ok("PATCH", monitorPath, { action: "resume" })).status).toBe("active")
      const oldTicks = (fixture.answers[`${monitorPath}/runs?limit=100`] as { items: Array<{ n: number | null }> }).items
      const tick = await ok("POST", `${monitorPath}/run_now`)
      const ticked = await untilTerminal(`${monitorPath}/runs/${tick.id}`)
      expect(ticked, JSON.stringify(ticked)).toMatchObject({ status: "done", changed: true, n: Math.max(...oldTicks.map((t) => t.n ?? 0)) + 1 })

      // WebSearch and a DeepResearch follow-up on the old report.
      const search = await ok("POST", `/v1/projects/${pid}/web_search/runs`, { queries: ["green widget"], engines: ["searxng", "brave"] })
      expect(search.status).toBe("done")
      const followup = await ok("POST", `/v1/projects/${pid}/deep_research/runs/${ids.research}/followup`, { text: "How do I keep a widget working?" })
      const researched = await untilTerminal(`/v1/projects/${pid}/deep_research/runs/${followup.run_id}`)
      expect(researched.status, JSON.stringify(researched).slice(0, 500)).toBe("done")
      expect(researched.parent_run_id).toBe(ids.research)

      // The old workspace takes a new file next to its old one.
      const filesPath = `/v1/projects/${pid}/workspaces/${ids.workspace}/files`
      const put = await service!.request("PUT", `${filesPath}/after.txt`, { rawBody: "written after the upgrade\n", headers: { "content-type": "text/plain" } })
      expect(put.status, put.text).toBeLessThan(300)
      const names = ((await ok("GET", filesPath)).items as Array<{ name: string }>).map((file) => file.name).sort()
      expect(names).toEqual(["after.txt", "notes.txt"])

      // The new runs were charged on the old ledger: the balance went down, with ledger rows of them.
      const account = await ok("GET", `/v1/projects/${pid}/billing/account`)
      expect(Number(account.credit_balance_usd)).toBeLessThan(balanceBefore)
      const usage = (await ok("GET", `/v1/projects/${pid}/billing/usage?limit=100`)).items as Array<{ run_id: string | null }>
      expect(usage.some((entry) => entry.run_id === addedId)).toBe(true)
    }, 300_000)
  })
}
