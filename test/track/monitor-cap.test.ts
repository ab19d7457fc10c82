/**
 * The plan's cap on monitors per project (WA_MAX_MONITORS_PER_PROJECT), through HTTP: concurrent
 * creates cannot pass it (counted under the project's lock in the create's transaction), a refusal
 * is 403 plan_limit_reached and writes nothing, and a canceled monitor frees its place.
 */
import { createServer, type Server } from "node:http"
import type { AddressInfo } from "node:net"
import { afterAll, beforeAll, expect, it } from "vitest"
import { type Service, startService, stopAndClean } from "../support/service.ts"

const CAP = 3
let service: Service
let pages: Server
let pagesUrl: string

beforeAll(async () => {
  pages = createServer((_request, response) => {
    response.writeHead(200, { "content-type": "text/html" })
    response.end("<!doctype html><title>Shop</title><main><h1>Widget</h1><p>In stock.</p></main>")
  })
  await new Promise<void>((resolve) => pages.listen(0, "127.0.0.1", resolve))
  pagesUrl = `http://127.0.0.1:${(pages.address() as AddressInfo).port}`
  service = await startService({
    env: { WA_ALLOW_PRIVATE_NETWORKS: "true", WA_MAX_MONITORS_PER_PROJECT: String(CAP), WA_RATE_LIMIT_REQUESTS: "100000" }
  })
})

afterAll(async () => {
  await stopAndClean(service)
  await new Promise<void>((resolve) => pages.close(() => resolve()))
})

const create = (i: number) =>
  service.request("POST", `/v1/projects/${service.projectId}/track/monitors`, {
    body: {
      intent: `Watch the widget page ${i}`,
      notify_channel: { kind: "console_inbox" },
      schedule: { kind: "interval", interval_seconds: 3600 },
      target_urls: [`${pagesUrl}/widget`]
    }
  })

it("12 concurrent creates against a cap of 3 make 3; the rest are 403 plan_limit_reached; a canceled monitor frees a place", async () => {
  const answers = await Promise.all(Array.from({ length: 12 }, (_, i) => create(i)))
  const made = answers.filter((answer) => answer.status === 201)
  const refused = answers.filter((answer) => answer.status !== 201)
  expect(made).toHaveLength(CAP)
  for (const answer of refused) {
    expect(answer.status).toBe(403)
    expect(answer.json.code).toBe("plan_limit_reached")
  }
  const listed = await service.request("GET", `/v1/projects/${service.projectId}/track/monitors?page_size=100`)
  expect(listed.json.total).toBe(CAP)

  const canceled = await service.request("PATCH", `/v1/projects/${service.projectId}/track/monitors/${made[0]!.json.id}`, {
    body: { action: "cancel" }
  })
  expect(canceled.status).toBe(200)
  expect((await create(100)).status).toBe(201)
  expect((await create(101)).status).toBe(403)
})
