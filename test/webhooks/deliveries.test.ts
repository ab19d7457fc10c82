/**
 * Callback deliveries as a resource: retried with backoff from an outbox in PostgreSQL (so a
 * restart does not lose them), listed per run, and retryable through the API once failed.
 */
import { createServer, type Server } from "node:http"
import type { AddressInfo } from "node:net"
import { Webhook } from "standardwebhooks"
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest"
import { type Service, startService, stopAndClean } from "../support/service.ts"
import { eventually } from "../support/runs.ts"
import { checkWebhookDelivery } from "../support/webhook-receiver.ts"

/** A callback receiver on loopback that answers with the status the test sets. */
const startReceiver = async () => {
  const received: Array<{ id: string; timestamp: string; signature: string; body: string }> = []
  let status = 500
  const server: Server = createServer((req, res) => {
    let body = ""
    req.on("data", (c) => (body += c))
    req.on("end", () => {
      received.push({
        id: String(req.headers["webhook-id"]),
        timestamp: String(req.headers["webhook-timestamp"]),
        signature: String(req.headers["webhook-signature"]),
        body
      })
      res.writeHead(status).end()
    })
  })
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`,
    received,
    answer: (next: number) => (status = next),
    close: () => new Promise<void>((resolve) => server.close(() => resolve()))
  }
}
type Receiver = Awaited<ReturnType<typeof startReceiver>>

// No model is configured, so a run fails at once and its callback goes out.
const env = (retryBaseMs: number) => ({ WA_ALLOW_PRIVATE_NETWORKS: "true", WA_WEBHOOK_RETRY_BASE_MS: String(retryBaseMs) })

const startRunWithCallback = async (service: Service, url: string) => {
  const created = await service.request("POST", `/v1/projects/${service.projectId}/do_anything/sessions`, {
    body: { instructions: "ends at once", keep_alive: false, callback_url: url }
  })
  expect(created.status).toBe(201)
  return created.json.latest_run_id as string
}

const deliveriesOf = async (service: Service, runId: string) => {
  const listed = await service.request("GET", `/v1/projects/${service.projectId}/webhook_deliveries?run_id=${runId}`)
  expect(listed.status).toBe(200)
  return listed.json.items as Array<any>
}

let receiver: Receiver
beforeAll(async () => {
  receiver = await startReceiver()
})
afterAll(() => receiver.close())
afterEach(() => {
  receiver.received.length = 0
})

describe("deliveries", () => {
  let service: Service
  beforeAll(async () => {
    service = await startService({ env: env(100) })
  }, 120_000)
  afterAll(() => stopAndClean(service))

  it("a failing receiver is retried with backoff until it accepts; the delivery lists every attempt", async () => {
    receiver.answer(500)
    const runId = await startRunWithCallback(service, receiver.url)
    await eventually("two failed attempts", async () => receiver.received.length >= 2 ? true : undefined)
    receiver.answer(204)
    const [delivery] = await eventually("delivered", async () => {
      const rows = await deliveriesOf(service, runId)
      return rows[0]?.status === "delivered" ? rows : undefined
    })
    expect(delivery).toMatchObject({ run_id: runId, url: receiver.url, event_type: "run.completed", last_status_code: 204, last_error: null, next_attempt_at: null })
    expect(delivery.attempts).toBe(receiver.received.length)
    expect(delivery.attempts).toBeGreaterThanOrEqual(3)
    // Every attempt carries the same webhook-id, signed with the project's secret.
    const secret = (await service.request("GET", `/v1/projects/${service.projectId}/webhook_secret`)).json.secret
    for (const attempt of receiver.received) {
      expect(attempt.id).toBe(delivery.id)
      expect(() => new Webhook(secret).verify(attempt.body, {
        "webhook-id": attempt.id, "webhook-timestamp": attempt.timestamp, "webhook-signature": attempt.signature
      })).not.toThrow()
      // The body is a run.completed body of the document's webhooks section.
      expect(checkWebhookDelivery(undefined, attempt.body).problems).toEqual([])
    }
    const one = await service.request("GET", `/v1/projects/${service.projectId}/webhook_deliveries/${delivery.id}`)
    expect(one.json).toEqual(delivery)
  })

  it("a delivery that failed every attempt can be retried through the API", async () => {
    receiver.answer(500)
    const runId = await startRunWithCallback(service, receiver.url)
    const [failed] = await eventually("failed", async () => {
      const rows = await deliveriesOf(service, runId)
      return rows[0]?.status === "failed" ? rows : undefined
    })
    expect(failed.attempts).toBe(6)
    expect(failed.last_error).toBe("HTTP 500")
    const base = `/v1/projects/${service.projectId}/webhook_deliveries`
    expect((await service.request("GET", `${base}?status=failed`)).json.items.map((d: any) => d.id)).toContain(failed.id)

    receiver.answer(200)
    const retried = await service.request("POST", `${base}/${failed.id}/retry`)
    expect(retried.status).toBe(202)
    expect(retried.json.status).toBe("pending")
    const delivered = await eventually("delivered after retry", async () => {
      const row = (await service.request("GET", `${base}/${failed.id}`)).json
      return row.status === "delivered" ? row : undefined
    })
    expect(delivered.attempts).toBe(7)

    const again = await service.request("POST", `${base}/${failed.id}/retry`)
    expect(again.status).toBe(409)
    expect(again.json).toMatchObject({ code: "delivery_not_retryable", extra: { status: "delivered" } })
    const unknown = await service.request("POST", `${base}/msg_00000000000000000000000000/retry`)
    expect(unknown.status).toBe(404)
    expect(unknown.json.code).toBe("delivery_not_found")
  })
})

describe("after a crash", () => {
  let service: Service | undefined
  afterAll(() => stopAndClean(service))

  it("a delivery waiting for its next attempt is delivered after the restart", async () => {
    receiver.answer(500)
    const first = await startService({ env: env(3_000) })
    service = first
    const runId = await startRunWithCallback(first, receiver.url)
    const [waiting] = await eventually("first attempt failed", async () => {
      const rows = await deliveriesOf(first, runId)
      return rows[0]?.status === "retrying" ? rows : undefined
    })
    expect(waiting.attempts).toBe(1)
    await first.kill()
    receiver.answer(200)
    service = await startService({ env: env(3_000), dataDir: first.dataDir, credentials: { projectId: first.projectId, apiKey: first.apiKey } })
    const restarted = service
    const delivered = await eventually("delivered after restart", async () => {
      const rows = await deliveriesOf(restarted, runId)
      return rows[0]?.status === "delivered" ? rows[0] : undefined
    })
    expect(delivered.id).toBe(waiting.id)
    expect(delivered.attempts).toBe(2)
  }, 120_000)
})
