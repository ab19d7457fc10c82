/**
 * Memory under oversized request bodies: the service's RSS before and after ten 50 MB POSTs (five
 * with Content-Length, refused before reading; five chunked, refused once the limit is passed).
 * Target: RSS growth <= 50 MB, every answer a 413 in the envelope, the service still answering.
 *
 *   node bench/body-limit-rss.ts
 */
import { readFileSync } from "node:fs"
import { request } from "node:http"
import { startService, stopAndClean } from "../test/support/service.ts"

const service = await startService({ env: { WA_RATE_LIMIT_REQUESTS: "100000" } })
const rssMb = () => Number(readFileSync(`/proc/${service.process.pid}/status`, "utf8").match(/VmRSS:\s+(\d+)/)![1]) / 1024
const url = new URL(`${service.url}/v1/projects/${service.projectId}/do_anything/sessions`)
const size = 50 * 1024 * 1024
const chunk = Buffer.alloc(1024 * 1024, "a")

/** Sends up to 50 MB (stopping when the server answers) and returns the status and code. */
const post = (chunked: boolean) =>
  new Promise<string>((resolve) => {
    let answered = false
    const req = request({
      host: url.hostname, port: url.port, path: url.pathname, method: "POST",
      headers: {
        authorization: `Bearer ${service.apiKey}`, "content-type": "application/json",
        ...(chunked ? { "transfer-encoding": "chunked" } : { "content-length": String(size) })
      }
    }, (res) => {
      answered = true
      let body = ""
      res.on("data", (c) => (body += c))
      res.on("end", () => {
        req.destroy()
        resolve(`${res.statusCode} ${(JSON.parse(body) as { code: string }).code}`)
      })
    })
    req.on("error", (error) => resolve(answered ? "answered" : `error ${error.message}`))
    let sent = 0
    const pump = () => {
      while (!answered && sent < size / chunk.length) {
        sent++
        if (!req.write(chunk)) return void req.once("drain", pump)
      }
      if (!answered) req.end()
    }
    pump()
  })

await new Promise((r) => setTimeout(r, 2000))
const before = rssMb()
const outcomes: Array<string> = []
for (let i = 0; i < 10; i++) outcomes.push(await post(i % 2 === 1))
await new Promise((r) => setTimeout(r, 1000))
const after = rssMb()
const health = await service.request("GET", "/healthz")
console.log(`answers: ${outcomes.join(", ")}`)
console.log(`rss before ${before.toFixed(1)} MB, after ten 50 MB requests ${after.toFixed(1)} MB, growth ${(after - before).toFixed(1)} MB (target <= 50)`)
console.log(`service still up: GET /healthz ${health.status}`)
await stopAndClean(service)
