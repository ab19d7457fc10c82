/**
 * A loopback receiver of signed deliveries: it records every request it accepts (headers and
 * body), can refuse the next N with 500, and verifies a delivery's Standard Webhooks signature with
 * the `standardwebhooks` library, as a customer's receiver would.
 */
import { createServer, type IncomingMessage } from "node:http"
import type { AddressInfo } from "node:net"
import { Webhook } from "standardwebhooks"

export interface Received {
  readonly headers: IncomingMessage["headers"]
  readonly body: string
}

export interface WebhookReceiver {
  /** Base URL without trailing slash. */
  readonly url: string
  /** The deliveries accepted so far, oldest first. */
  readonly received: Array<Received>
  /** Answers the next `n` deliveries with 500 (not recorded). */
  readonly refuseNext: (n: number) => void
  /** How many refusals are still to come. */
  readonly refusalsLeft: () => number
  readonly close: () => Promise<void>
}

export const startWebhookReceiver = async (): Promise<WebhookReceiver> => {
  const received: Array<Received> = []
  let refuse = 0
  const server = createServer((request, response) => {
    let body = ""
    request.on("data", (chunk) => (body += chunk))
    request.on("end", () => {
      if (refuse > 0) {
        refuse--
        response.writeHead(500).end()
        return
      }
      received.push({ headers: request.headers, body })
      response.writeHead(204).end()
    })
  })
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    received,
    refuseNext: (n) => {
      refuse = n
    },
    refusalsLeft: () => refuse,
    close: () => new Promise<void>((resolve) => server.close(() => resolve()))
  }
}

/** The delivery's payload if its signature is valid for `secret`; throws otherwise. */
export const verifiedDelivery = (secret: string, delivery: Received) =>
  new Webhook(secret).verify(delivery.body, {
    "webhook-id": String(delivery.headers["webhook-id"]),
    "webhook-timestamp": String(delivery.headers["webhook-timestamp"]),
    "webhook-signature": String(delivery.headers["webhook-signature"])
  }) as { type: string; data: any }
