/**
 * The HTTP contract of the notification channels' resources, on one service with private networks
 * NOT allowed:
 * - project webhook endpoints (`/v1/projects/{pid}/webhooks`): create (201, the secret once), get
 *   and list without it, cursor pages, delete (204), the per-project limit (409
 *   webhook_endpoint_limit_reached), strict bodies and url checks (422 on ["body", "url"]), admin
 *   keys only, for reads too (the role table of the README);
 * - the console inbox (`/v1/projects/{pid}/inbox`): newest first with unread_count, the unread
 *   filter, cursor pages, PATCH {read} (strict);
 * - webhook deliveries show monitor_id and channel and filter by monitor_id.
 * Notifications and monitor deliveries are written into the service's database directly (what
 * NotificationChannels records; its own behaviour is covered in test/in-process).
 */
import type pg from "pg"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { makeId } from "../../src/domain/ids.ts"
import { embeddedDatabaseClient, type Service, startService, stopAndClean } from "../support/service.ts"

let service: Service
let db: pg.Client

beforeAll(async () => {
  service = await startService({ env: { WA_ALLOW_PRIVATE_NETWORKS: "false" } })
  db = await embeddedDatabaseClient(service.dataDir)
}, 120_000)

afterAll(async () => {
  await db?.end()
  await stopAndClean(service)
})

const webhooks = () => `/v1/projects/${service.projectId}/webhooks`
const inbox = () => `/v1/projects/${service.projectId}/inbox`
// A literal public address: accepted without DNS, never contacted (no delivery goes to it here).
const publicUrl = (n: number) => `https://1.1.1.1/hooks/${n}`

const expect422 = (response: { status: number; json: any; text: string }, loc: ReadonlyArray<string>) => {
  expect(response.status, response.text).toBe(422)
  expect(response.json.code).toBe("validation_error")
  expect(response.json.extra.errors, response.text).toEqual(expect.arrayContaining([expect.objectContaining({ loc })]))
}

describe("webhook endpoints", () => {
  it("create returns the secret once; get and list never do; delete is 204, then 404", async () => {
    const created = await service.request("POST", webhooks(), { body: { url: publicUrl(0), description: "ops channel" } })
    expect(created.status, created.text).toBe(201)
    expect(created.json).toMatchObject({ url: publicUrl(0), description: "ops channel" })
    expect(created.json.id).toMatch(/^wh_[0-9a-z]{26}$/)
    expect(created.json.secret).toMatch(/^whsec_/)
    expect(Buffer.from(created.json.secret.slice(6), "base64")).toHaveLength(32)
    const { secret, ...view } = created.json

    const one = await service.request("GET", `${webhooks()}/${view.id}`)
    expect(one.status).toBe(200)
    expect(one.json).toEqual(view)
    const listed = await service.request("GET", webhooks())
    expect(listed.json.items).toContainEqual(view)
    expect(listed.text).not.toContain(secret)

    const deleted = await service.request("DELETE", `${webhooks()}/${view.id}`)
    expect(deleted.status).toBe(204)
    expect(deleted.text).toBe("")
    for (const method of ["GET", "DELETE"]) {
      const gone = await service.request(method, `${webhooks()}/${view.id}`)
      expect(gone.status).toBe(404)
      expect(gone.json.code).toBe("webhook_endpoint_not_found")
    }
  })

  it("an Idempotency-Key replay returns the same endpoint with the secret as null", async () => {
    const headers = { "idempotency-key": crypto.randomUUID() }
    const first = await service.request("POST", webhooks(), { body: { url: publicUrl(1) }, headers })
    const replay = await service.request("POST", webhooks(), { body: { url: publicUrl(1) }, headers })
    expect(first.status).toBe(201)
    expect(replay.status).toBe(201)
    expect(replay.json).toEqual({ ...first.json, secret: null })
    expect(first.json.description).toBeNull()
    await service.request("DELETE", `${webhooks()}/${first.json.id}`)
  })

  it("bad bodies are 422 naming the field: unknown fields, a malformed or private url, a long description", async () => {
    expect422(await service.request("POST", webhooks(), { body: { url: publicUrl(2), secret: "whsec_mine" } }), ["body", "secret"])
    expect422(await service.request("POST", webhooks(), { body: {} }), ["body", "url"])
    expect422(await service.request("POST", webhooks(), { body: { url: publicUrl(2), description: "x".repeat(501) } }), ["body", "description"])
    // The private urls are the service's own loopback listener in several spellings; a refused url
    // is never contacted (it is checked when the endpoint is created).
    const port = new URL(service.url).port
    const privateUrls = [`http://127.0.0.1:${port}/hook`, `http://[::ffff:7f00:1]:${port}/hook`, `http://localhost:${port}/hook`, `http://0x7f000001:${port}/hook`]
    for (const url of ["ftp://example.com/hook", "not a url", "http://user:pw@example.com/", ...privateUrls]) {
      const refused = await service.request("POST", webhooks(), { body: { url } })
      expect422(refused, ["body", "url"])
      expect(JSON.stringify(refused.json.extra.errors)).not.toContain("callback_url")
      if (privateUrls.includes(url)) expect(JSON.stringify(refused.json.extra.errors), url).toContain("private_address")
    }
    const listed = await service.request("GET", webhooks())
    expect(listed.json.items).toEqual([])
  })

  it("at most 20 per project (409 webhook_endpoint_limit_reached); cursor pages, newest first", async () => {
    const ids: Array<string> = []
    for (let i = 0; i < 20; i++) {
      const created = await service.request("POST", webhooks(), { body: { url: publicUrl(100 + i) } })
      expect(created.status, created.text).toBe(201)
      ids.push(created.json.id)
    }
    const over = await service.request("POST", webhooks(), { body: { url: publicUrl(200) } })
    expect(over.status).toBe(409)
    expect(over.json).toMatchObject({ code: "webhook_endpoint_limit_reached", extra: { limit: 20 } })

    const seen: Array<string> = []
    let cursor: string | null = null
    do {
      const page: any = await service.request("GET", `${webhooks()}?limit=7${cursor ? `&cursor=${cursor}` : ""}`)
      expect(page.status).toBe(200)
      seen.push(...page.json.items.map((item: any) => item.id))
      cursor = page.json.next_cursor
    } while (cursor !== null)
    expect(seen).toEqual([...ids].reverse())
    const badCursor = await service.request("GET", `${webhooks()}?cursor=nope`)
    expect(badCursor.status).toBe(400)

    // Room again after a delete.
    expect((await service.request("DELETE", `${webhooks()}/${ids[0]}`)).status).toBe(204)
    const again = await service.request("POST", webhooks(), { body: { url: publicUrl(201) } })
    expect(again.status).toBe(201)
    for (const id of [...ids.slice(1), again.json.id]) await service.request("DELETE", `${webhooks()}/${id}`)
  })

  it("a run key may not list, read, create or delete endpoints (403): their URLs are an admin's", async () => {
    const minted = await service.request("POST", `/v1/projects/${service.projectId}/api_keys`, { body: { name: "runner", scope: "run" } })
    expect(minted.status).toBe(201)
    const key = minted.json.secret_token as string
    const created = await service.request("POST", webhooks(), { body: { url: publicUrl(3) } })
    const refused = await service.request("POST", webhooks(), { body: { url: publicUrl(4) }, key })
    expect(refused.status).toBe(403)
    expect(refused.json.code).toBe("forbidden")
    expect((await service.request("DELETE", `${webhooks()}/${created.json.id}`, { key })).status).toBe(403)
    for (const path of [`${webhooks()}/${created.json.id}`, webhooks()]) {
      const read = await service.request("GET", path, { key })
      expect(read.status, path).toBe(403)
      expect(read.json.code).toBe("forbidden")
      expect(read.text).not.toContain(publicUrl(3))
    }
    await service.request("DELETE", `${webhooks()}/${created.json.id}`)
  })
})

describe("inbox", () => {
  const monitorId = makeId("mon")
  const notifications: Array<string> = []

  beforeAll(async () => {
    for (let i = 0; i < 3; i++) {
      const id = makeId("ntf", Date.now() + i)
      notifications.push(id)
      await db.query(
        `INSERT INTO inbox_notifications (id, project_id, monitor_id, tick_id, type, title, data) VALUES ($1, $2, $3, $4, $5, $6, $7)`,
        [id, service.projectId, monitorId, makeId("tick"), "monitor.triggered", `Change ${i}`, JSON.stringify({ ...triggeredBody(monitorId, makeId("tick")).data, tick_n: i })]
      )
    }
  })

  it("lists newest first with the unread count; read and unread filter; cursor pages", async () => {
    const all = await service.request("GET", inbox())
    expect(all.status).toBe(200)
    expect(all.json.unread_count).toBe(3)
    expect(all.json.next_cursor).toBeNull()
    expect(all.json.items.map((n: any) => n.id)).toEqual([...notifications].reverse())
    expect(all.json.items[0]).toMatchObject({ monitor_id: monitorId, type: "monitor.triggered", title: "Change 2", data: { monitor_id: monitorId, tick_n: 2 }, read: false, read_at: null })

    const first = await service.request("GET", `${inbox()}?limit=2`)
    expect(first.json.items).toHaveLength(2)
    const second = await service.request("GET", `${inbox()}?limit=2&cursor=${first.json.next_cursor}`)
    expect(second.json.items.map((n: any) => n.id)).toEqual([notifications[0]])
    expect(second.json.next_cursor).toBeNull()

    const read = await service.request("PATCH", `${inbox()}/${notifications[1]}`, { body: { read: true } })
    expect(read.status, read.text).toBe(200)
    expect(read.json).toMatchObject({ id: notifications[1], read: true })
    expect(read.json.read_at).toEqual(expect.any(String))
    // Marking it read again keeps the first read time.
    const again = await service.request("PATCH", `${inbox()}/${notifications[1]}`, { body: { read: true } })
    expect(again.json.read_at).toBe(read.json.read_at)

    const unread = await service.request("GET", `${inbox()}?unread=true`)
    expect(unread.json.items.map((n: any) => n.id)).toEqual([notifications[2], notifications[0]])
    expect(unread.json.unread_count).toBe(2)
    const readOnly = await service.request("GET", `${inbox()}?unread=false`)
    expect(readOnly.json.items.map((n: any) => n.id)).toEqual([notifications[1]])
    expect(readOnly.json.unread_count).toBe(2)
    expect((await service.request("GET", `${inbox()}/${notifications[1]}`)).json).toEqual(again.json)

    const back = await service.request("PATCH", `${inbox()}/${notifications[1]}`, { body: { read: false } })
    expect(back.json).toMatchObject({ read: false, read_at: null })
    expect((await service.request("GET", inbox())).json.unread_count).toBe(3)
  })

  it("bad requests: strict PATCH body, unknown id, bad filter", async () => {
    expect422(await service.request("PATCH", `${inbox()}/${notifications[0]}`, { body: { read: true, title: "x" } }), ["body", "title"])
    expect422(await service.request("PATCH", `${inbox()}/${notifications[0]}`, { body: { read: "yes" } }), ["body", "read"])
    expect422(await service.request("PATCH", `${inbox()}/${notifications[0]}`, { body: {} }), ["body", "read"])
    const unknown = await service.request("PATCH", `${inbox()}/ntf_00000000000000000000000000`, { body: { read: true } })
    expect(unknown.status).toBe(404)
    expect(unknown.json.code).toBe("notification_not_found")
    expect((await service.request("GET", `${inbox()}/ntf_00000000000000000000000000`)).status).toBe(404)
    const badFilter = await service.request("GET", `${inbox()}?unread=maybe`)
    expect(badFilter.status).toBe(422)
    expect(badFilter.json.code).toBe("validation_error")
  })
})

/** The body a monitor's notification records (a track.monitor.triggered body of the document's webhooks section). */
const triggeredBody = (monitorId: string, tickId: string) => ({
  type: "monitor.triggered",
  timestamp: new Date().toISOString(),
  data: {
    monitor_id: monitorId, run_id: tickId, tick_n: 1, intent: "watch the page", snapshot_id: makeId("snap"), changed: false,
    extracted: null, diff: null, target_urls: ["https://example.com/"], fetched_at: new Date().toISOString()
  }
})

describe("webhook deliveries of monitors", () => {
  it("show monitor_id and channel, and filter by monitor_id", async () => {
    const monitorId = makeId("mon")
    const tickId = makeId("tick")
    const id = `msg_${makeId("dlv").slice(4)}`
    await db.query(
      `INSERT INTO webhook_deliveries (id, project_id, run_id, monitor_id, channel, url, event_type, payload, status, delivered_at)
       VALUES ($1, $2, $3, $4, 'console_inbox', $5, 'monitor.triggered', $6::jsonb, 'delivered', now())`,
      [id, service.projectId, tickId, monitorId, `/v1/projects/${service.projectId}/inbox/ntf_x`, JSON.stringify(triggeredBody(monitorId, tickId))]
    )
    const base = `/v1/projects/${service.projectId}/webhook_deliveries`
    const listed = await service.request("GET", `${base}?monitor_id=${monitorId}`)
    expect(listed.status).toBe(200)
    expect(listed.json.items).toHaveLength(1)
    expect(listed.json.items[0]).toMatchObject({ id, run_id: tickId, monitor_id: monitorId, channel: "console_inbox", status: "delivered" })
    expect(listed.json.items[0]).not.toHaveProperty("secret")
    expect((await service.request("GET", `${base}?monitor_id=${makeId("mon")}`)).json.items).toEqual([])
    const retried = await service.request("POST", `${base}/${id}/retry`)
    expect(retried.status).toBe(409)
    expect(retried.json).toMatchObject({ code: "delivery_not_retryable", extra: { status: "delivered" } })
  })
})
