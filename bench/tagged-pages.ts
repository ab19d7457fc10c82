/**
 * A local page server for benchmarks: every request with `?tag=X` has its arrival time recorded,
 * so a benchmark can tell when an agent's (or a bare browser's) navigation reached the page.
 */
import { createServer } from "node:http"
import type { AddressInfo } from "node:net"

export const startTaggedPages = async () => {
  const arrivals = new Map<string, Array<number>>()
  const waiters = new Map<string, Array<(at: number) => void>>()
  const server = createServer((req, res) => {
    const tag = new URL(req.url ?? "/", "http://x").searchParams.get("tag")
    if (tag !== null) {
      const at = performance.now()
      arrivals.set(tag, [...(arrivals.get(tag) ?? []), at])
      for (const resolve of waiters.get(tag) ?? []) resolve(at)
      waiters.delete(tag)
    }
    res.writeHead(200, { "content-type": "text/html" }).end("<!doctype html><title>bench</title><h1>Hello</h1><a href='/'>home</a>")
  })
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/`,
    /** Every arrival time of a tag, in order. */
    arrivals,
    /** The first arrival of a tag (now or when it comes). */
    firstArrival: (tag: string) =>
      new Promise<number>((resolve) => {
        const seen = arrivals.get(tag)?.[0]
        if (seen !== undefined) return resolve(seen)
        waiters.set(tag, [...(waiters.get(tag) ?? []), resolve])
      }),
    close: () => new Promise<void>((resolve) => server.close(() => resolve()))
  }
}
