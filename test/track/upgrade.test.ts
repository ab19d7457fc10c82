/**
 * Track's rows across the upgrade that moved them onto the shared run tables
 * (src/store/migrations/0033_track_on_runs.ts): tick runs from `monitor_runs` into `runs`, the
 * monitors' event logs from `monitor_events` into `run_events`.
 *
 * A monitor runs a few ticks (a baseline, a change that fires, a failure, a recovery) on the real
 * service; everything Track serves of it is read through the API. The database is then put back
 * in the shape it had before 0033 (the rows in `monitor_runs` and `monitor_events`, tables made as
 * migrations 0012 and 0018 make them, which the test checks against a database migrated only that
 * far), with two more tick rows written as the old store wrote them (a skipped tick and one not
 * started yet). The service starts again, migrates forward by itself, and must serve the same
 * bytes: monitor, runs (list, pages, each), snapshots, the event stream and its Last-Event-ID
 * replay; and go on where it stood (the next tick's number and event ids follow the old ones).
 */
import { createServer, type Server } from "node:http"
import { rmSync } from "node:fs"
import { Effect, Redacted } from "effect"
import * as NodeServices from "@effect/platform-node/NodeServices"
import { PgClient, PgMigrator } from "@effect/sql-pg"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { listenOnLoopback } from "../support/listen.ts"
import { makeId } from "../../src/domain/ids.ts"
import { migrations } from "../../src/store/migrations.ts"
import { eventually } from "../support/runs.ts"
import { readSse } from "../support/sse.ts"
import { embeddedDatabaseClient, newDataDir, type Service, startService } from "../support/service.ts"

let pages: Server
let pagesUrl: string
const content = new Map<string, { status: number; text: string }>()

const dataDir = newDataDir()
let service: Service | undefined

const env = {
  WA_ALLOW_PRIVATE_NETWORKS: "true",
  WA_DRAIN_SECONDS: "1",
  WA_RATE_LIMIT_REQUESTS: "100000"
}

const html = (text: string) =>
  `<!doctype html><html><head><title>Stock</title></head><body><main><h1>Widget</h1><p>${text}</p></main></body></html>`

beforeAll(async () => {
  pages = createServer((request, response) => {
    const entry = content.get(request.url ?? "/")
    response.writeHead(entry?.status ?? 404, { "content-type": "text/html; charset=utf-8" })
    response.end(entry === undefined ? "not found" : html(entry.text))
  })
  pagesUrl = (await listenOnLoopback(pages)).url
})

afterAll(async () => {
  await service?.stop()
  rmSync(dataDir, { recursive: true, force: true })
  await new Promise((resolve) => pages?.close(resolve))
})

/** Applies this build's migrations up to `upTo` to the database at `url`. */
const migrate = (url: string, upTo: number) =>
  Effect.runPromise(
    PgMigrator.run({ loader: Effect.map(migrations, (all) => all.filter(([id]) => id <= upTo)), table: "wa_migrations" }).pipe(
      Effect.provide(PgClient.layer({ url: Redacted.make(url) })),
      Effect.provide(NodeServices.layer)
    )
  )

/** The tables of Track's tick runs and events as migrations 0012 and 0018 made them. */
const oldTables = `
  CREATE TABLE monitor_events (
    monitor_id text NOT NULL REFERENCES monitors(id) ON DELETE CASCADE,
    id bigint NOT NULL,
    type text NOT NULL,
    data jsonb NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (monitor_id, id)
  );
  CREATE TABLE monitor_runs (
    id text PRIMARY KEY,
    monitor_id text NOT NULL REFERENCES monitors(id) ON DELETE CASCADE,
    project_id text NOT NULL,
    n integer,
    trigger text NOT NULL,
    slot_at timestamptz,
    status text NOT NULL DEFAULT 'running',
    changed boolean,
    fired boolean,
    snapshot_id text,
    pages jsonb NOT NULL DEFAULT '[]',
    error_code text,
    error_detail text,
    llm_cost_micros bigint NOT NULL DEFAULT 0,
    created_at timestamptz NOT NULL DEFAULT now(),
    started_at timestamptz,
    finished_at timestamptz,
    UNIQUE (monitor_id, slot_at)
  );
  CREATE INDEX monitor_runs_monitor ON monitor_runs (monitor_id, id DESC);
  ALTER TABLE monitor_runs ADD COLUMN service_cost_micros bigint NOT NULL DEFAULT 0;`

const tickColumns = "id, monitor_id, project_id, n, trigger, slot_at, status, changed, fired, snapshot_id, pages, error_code, error_detail, llm_cost_micros, service_cost_micros, created_at, started_at, finished_at"

/** The shape of Track's tables and of run_events' references, to compare a database with another. */
const schemaOf = async (db: { query: (text: string) => Promise<{ rows: Array<unknown> }> }) => ({
  columns: (await db.query(`
    SELECT table_name, column_name, data_type, is_nullable, column_default FROM information_schema.columns
    WHERE table_name IN ('monitor_runs', 'monitor_events') ORDER BY table_name, ordinal_position`)).rows,
  constraints: (await db.query(`
    SELECT conrelid::regclass::text AS table_name, pg_get_constraintdef(oid) AS definition FROM pg_constraint
    WHERE conrelid::regclass::text IN ('monitor_runs', 'monitor_events', 'run_events') ORDER BY 1, 2`)).rows,
  indexes: (await db.query(`
    SELECT tablename, indexdef FROM pg_indexes WHERE tablename IN ('monitor_runs', 'monitor_events', 'run_events', 'runs') ORDER BY 1, 2`)).rows
})

describe("upgrade to Track on the run tables", () => {
  it("moves the tick runs and events of a database made before it, and serves them as before", async () => {
    service = await startService({ dataDir, env })
    const credentials = { projectId: service.projectId, apiKey: service.apiKey }
    const monitorPath = (id: string) => `/v1/projects/${credentials.projectId}/track/monitors/${id}`
    const get = async (path: string) => {
      const response = await service!.request("GET", path)
      expect(response.status).toBe(200)
      return response.text
    }
    const runNow = async (id: string) => {
      const response = await service!.request("POST", `${monitorPath(id)}/run_now`)
      expect(response.status).toBe(202)
      return eventually("the run_now tick to end", async () => {
        const tick = (await service!.request("GET", `${monitorPath(id)}/runs/${response.json.id}`)).json
        return tick.status === "running" ? undefined : tick
      }, { timeoutMs: 30_000 })
    }

    content.set("/stock", { status: 200, text: "In stock: 5" })
    const created = await service.request("POST", `/v1/projects/${credentials.projectId}/track/monitors`, {
      body: {
        intent: "tell me when the stock changes",
        notify_channel: { kind: "console_inbox" },
        schedule: { kind: "interval", interval_seconds: 3600 },
        target_urls: [`${pagesUrl}/stock`]
      }
    })
    expect(created.status).toBe(201)
    const id: string = created.json.id
    await eventually("the baseline tick", async () => {
      const items = (await service!.request("GET", `${monitorPath(id)}/runs`)).json.items as Array<{ status: string }>
      return items.length === 1 && items[0]!.status !== "running" ? items : undefined
    }, { timeoutMs: 30_000 })
    content.set("/stock", { status: 200, text: "In stock: 4" })
    expect(await runNow(id)).toMatchObject({ status: "done", changed: true, fired: true })
    content.set("/stock", { status: 500, text: "Down" })
    expect(await runNow(id)).toMatchObject({ status: "failed" })
    content.set("/stock", { status: 200, text: "In stock: 3" })
    expect(await runNow(id)).toMatchObject({ status: "done", changed: true })

    const db = await embeddedDatabaseClient(dataDir)
    const eventCount = Number((await db.query("SELECT count(*) FROM run_events WHERE run_id = $1", [id])).rows[0].count)
    expect(eventCount).toBeGreaterThanOrEqual(10)
    const auth = { authorization: `Bearer ${credentials.apiKey}` }
    /** Everything Track serves of the monitor. */
    const served = async () => {
      const runs = JSON.parse(await get(`${monitorPath(id)}/runs?limit=100`)).items as Array<{ id: string }>
      const snapshots = JSON.parse(await get(`${monitorPath(id)}/snapshots?limit=100`)).items as Array<{ id: string }>
      const firstPage = JSON.parse(await get(`${monitorPath(id)}/runs?limit=2`))
      const stream = await readSse(`${service!.url}${monitorPath(id)}/events`, auth, { timeoutMs: 15_000, stopAfter: (events) => events.length >= eventCount })
      const replay = await readSse(`${service!.url}${monitorPath(id)}/events`, { ...auth, "last-event-id": "7" }, {
        timeoutMs: 15_000,
        stopAfter: (events) => events.length >= eventCount - 7
      })
      return {
        monitor: await get(monitorPath(id)),
        runs: await get(`${monitorPath(id)}/runs?limit=100`),
        firstPage: JSON.stringify(firstPage),
        secondPage: await get(`${monitorPath(id)}/runs?limit=2&cursor=${encodeURIComponent(firstPage.next_cursor)}`),
        eachRun: await Promise.all(runs.map((run) => get(`${monitorPath(id)}/runs/${run.id}`))),
        snapshots: await get(`${monitorPath(id)}/snapshots?limit=100`),
        eachSnapshot: await Promise.all(snapshots.map((snapshot) => get(`${monitorPath(id)}/snapshots/${snapshot.id}`))),
        events: stream.events,
        replay: replay.events
      }
    }
    const before = await served()
    expect(before.events.length).toBe(eventCount)
    expect(before.replay.map((event) => event.id)).toEqual(before.events.slice(7).map((event) => event.id))
    expect(JSON.parse(before.firstPage).next_cursor).toEqual(expect.any(String))

    // The database as it was before 0033: the rows back in monitor_runs and monitor_events.
    const ticksBefore = (await db.query(`SELECT ${tickColumns} FROM monitor_runs ORDER BY id`)).rows
    const eventsBefore = (await db.query("SELECT monitor_id, id, type, data, created_at FROM monitor_events ORDER BY monitor_id, id")).rows
    expect(ticksBefore).toHaveLength(4)
    const skippedId = makeId("tick", Date.parse("2026-01-02T03:04:05.700Z"))
    const waitingId = makeId("tick", Date.parse("2026-01-02T03:05:00Z"))
    const added = (text: string) => text.includes(skippedId) || text.includes(waitingId)
    await db.query("BEGIN")
    await db.query(`CREATE TEMP TABLE old_ticks AS SELECT ${tickColumns} FROM monitor_runs`)
    await db.query("CREATE TEMP TABLE old_events AS SELECT monitor_id, id, type, data, created_at FROM monitor_events")
    await db.query("DROP VIEW monitor_runs")
    await db.query("DROP VIEW monitor_events")
    await db.query("DELETE FROM run_events WHERE run_id IN (SELECT monitor_id FROM old_events)")
    await db.query("DELETE FROM runs WHERE kind = 'track_tick'")
    await db.query("DROP INDEX runs_track_tick_slot")
    await db.query("DROP INDEX runs_track_tick_monitor")
    await db.query("ALTER TABLE run_events ADD CONSTRAINT run_events_run_id_fkey FOREIGN KEY (run_id) REFERENCES runs(id) ON DELETE CASCADE")
    await db.query(oldTables)
    await db.query(`INSERT INTO monitor_runs (${tickColumns}) SELECT ${tickColumns} FROM old_ticks`)
    await db.query("INSERT INTO monitor_events (monitor_id, id, type, data, created_at) SELECT monitor_id, id, type, data, created_at FROM old_events")
    // Two more rows as the old store wrote them: a scheduled tick skipped while the monitor was
    // paused, and a run_now tick made but not started (its costs as a tick that had spent some).
    // Both older than the others: the first pages of the list stay what they were.
    await db.query(`
      INSERT INTO monitor_runs (id, monitor_id, project_id, n, trigger, slot_at, status, error_detail, created_at, finished_at)
      VALUES ($3, $1, $2, NULL, 'schedule', '2026-01-02T03:04:05.678Z', 'skipped', 'the monitor is paused',
        '2026-01-02T03:04:05.700Z', '2026-01-02T03:04:05.800Z')`, [id, credentials.projectId, skippedId])
    await db.query(`
      INSERT INTO monitor_runs (id, monitor_id, project_id, trigger, llm_cost_micros, service_cost_micros, created_at)
      VALUES ($3, $1, $2, 'run_now', 1234567, 2500, '2026-01-02T03:05:00Z')`, [id, credentials.projectId, waitingId])
    await db.query("DELETE FROM wa_migrations WHERE migration_id = 33")
    await db.query("COMMIT")
    const oldTicks = (await db.query(`SELECT ${tickColumns} FROM monitor_runs ORDER BY id`)).rows

    // Those tables are the ones a database migrated up to 0032 has.
    const name = `wa_track_schema_${Date.now()}`
    await db.query(`CREATE DATABASE ${name}`)
    try {
      const url = `postgres://${db.user}:${encodeURIComponent(db.password ?? "")}@${db.host}:${db.port}/${name}`
      await migrate(url, 32)
      const pg = (await import("pg")).default
      const reference = new pg.Client({ connectionString: url })
      await reference.connect()
      try {
        expect(await schemaOf(db)).toEqual(await schemaOf(reference))
      } finally {
        await reference.end()
      }
    } finally {
      await db.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)
    }
    await db.end()

    // The service starts again on that database and migrates it forward itself.
    await service.stop()
    service = await startService({ dataDir, env, credentials })
    const upgraded = await embeddedDatabaseClient(dataDir)
    try {
      expect(Number((await upgraded.query("SELECT max(migration_id) AS m FROM wa_migrations")).rows[0].m)).toBe(33)
      // The old tables' rows, as the views of the same name show them now.
      expect((await upgraded.query(`SELECT ${tickColumns} FROM monitor_runs ORDER BY id`)).rows).toEqual(oldTicks)
      expect((await upgraded.query("SELECT monitor_id, id, type, data, created_at FROM monitor_events ORDER BY monitor_id, id")).rows).toEqual(eventsBefore)
      expect((await upgraded.query("SELECT count(*)::int AS n FROM runs WHERE kind = 'track_tick'")).rows[0].n).toBe(6)
      expect((await upgraded.query("SELECT count(*)::int AS n FROM run_events WHERE run_id = $1", [id])).rows[0].n).toBe(eventCount)
    } finally {
      await upgraded.end()
    }

    // The two rows written the old way, through the API.
    const skipped = JSON.parse(await get(`${monitorPath(id)}/runs/${skippedId}`))
    expect(skipped).toMatchObject({
      id: skippedId,
      n: null,
      trigger: "schedule",
      slot_at: "2026-01-02T03:04:05.678Z",
      status: "skipped",
      error: null,
      finished_at: "2026-01-02T03:04:05.800Z"
    })
    const waiting = JSON.parse(await get(`${monitorPath(id)}/runs/${waitingId}`))
    expect(waiting).toMatchObject({ id: waitingId, n: null, trigger: "run_now", slot_at: null, status: "running", started_at: null, finished_at: null })
    expect(JSON.stringify(waiting)).toContain("1.234567")

    // Everything served before is served the same (the list without the two added rows).
    const after = await served()
    const withoutAdded = (text: string) => {
      const page = JSON.parse(text)
      return JSON.stringify({ ...page, items: page.items.filter((item: { id: string }) => item.id !== skippedId && item.id !== waitingId) })
    }
    expect(after.monitor).toBe(before.monitor)
    expect(withoutAdded(after.runs)).toBe(before.runs)
    expect(after.eachRun.filter((text) => !added(text))).toEqual(before.eachRun)
    expect(after.firstPage).toBe(before.firstPage)
    // The second page is the same but for what comes after it now (the two older rows).
    expect(JSON.parse(after.secondPage).items).toEqual(JSON.parse(before.secondPage).items)
    expect(after.snapshots).toBe(before.snapshots)
    expect(after.eachSnapshot).toEqual(before.eachSnapshot)
    expect(after.events).toEqual(before.events)
    expect(after.replay).toEqual(before.replay)

    // And the monitor goes on where it stood: the next tick's number, the next event ids.
    const lastN = Math.max(...JSON.parse(before.runs).items.map((item: { n: number | null }) => item.n ?? 0))
    const next = await runNow(id)
    expect(next).toMatchObject({ n: lastN + 1, status: "done", changed: false })
    const more = await readSse(`${service.url}${monitorPath(id)}/events`, { ...auth, "last-event-id": String(eventCount) }, {
      timeoutMs: 15_000,
      stopAfter: (events) => events.some((event) => event.event === "monitor.tick.completed")
    })
    expect(more.events[0]!.id).toBe(eventCount + 1)
    expect(more.events.map((event) => event.event)).toEqual(["monitor.tick.started", "monitor.tick.completed"])
  }, 180_000)
})
