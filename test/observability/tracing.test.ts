/**
 * Spans reach an OTLP collector when WA_OTLP_TRACES_URL names one: a request's server span and
 * the store calls made while it was answered, in one trace. The collector is the test's own
 * loopback server taking OTLP/HTTP JSON, as a real collector does.
 */
import { createServer } from "node:http"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { listenOnLoopback } from "../support/listen.ts"
import { type Service, startService, stopAndClean } from "../support/service.ts"

interface ExportedSpan {
  readonly traceId: string
  readonly spanId: string
  readonly parentSpanId?: string
  readonly name: string
  readonly attributes: ReadonlyArray<{ readonly key: string; readonly value: Record<string, unknown> }>
}

describe("OTLP traces", () => {
  const spans: Array<ExportedSpan> = []
  const paths: Array<string> = []
  const collector = createServer((req, res) => {
    const chunks: Array<Buffer> = []
    req.on("data", (chunk: Buffer) => chunks.push(chunk))
    req.on("end", () => {
      paths.push(`${req.method} ${req.url} ${req.headers["content-type"]}`)
      const body = JSON.parse(Buffer.concat(chunks).toString("utf8")) as {
        resourceSpans: Array<{ scopeSpans: Array<{ spans: Array<ExportedSpan> }> }>
      }
      for (const resource of body.resourceSpans) for (const scope of resource.scopeSpans) spans.push(...scope.spans)
      res.writeHead(200, { "content-type": "application/json" }).end("{}")
    })
  })
  let service: Service | undefined

  beforeAll(async () => {
    const { url } = await listenOnLoopback(collector)
    service = await startService({ env: { WA_OTLP_TRACES_URL: `${url}/v1/traces` } })
  }, 60_000)
  afterAll(async () => {
    await stopAndClean(service)
    collector.close()
  })

  it("exports a request's span with the store calls it made under it, in one trace", async () => {
    const listed = await service!.request("GET", `/v1/projects/${service!.projectId}/api_keys`)
    expect(listed.status).toBe(200)
    await expect.poll(() => spans.some((s) => s.name.startsWith("ApiKeyStore.")), { timeout: 15_000, interval: 200 }).toBe(true)
    expect(paths.every((p) => p.startsWith("POST /v1/traces application/json")), paths.join("\n")).toBe(true)
    const server = spans.find((s) => s.attributes.some((a) => a.key === "url.path" && a.value["stringValue"] === `/v1/projects/${service!.projectId}/api_keys`))
    expect(server, spans.map((s) => s.name).join(", ")).toBeDefined()
    const inTrace = spans.filter((s) => s.traceId === server!.traceId)
    const names = inTrace.map((s) => s.name)
    // Authentication looked the key up, and the handler listed the project's keys.
    expect(names.filter((n) => n.startsWith("ApiKeyStore.")).length, names.join(", ")).toBeGreaterThanOrEqual(1)
    // Every span of the trace hangs from the request's span, directly or through another.
    const byId = new Map(inTrace.map((s) => [s.spanId, s]))
    for (const span of inTrace) {
      let cursor: ExportedSpan | undefined = span
      while (cursor !== undefined && cursor.spanId !== server!.spanId) cursor = cursor.parentSpanId ? byId.get(cursor.parentSpanId) : undefined
      expect(cursor, `${span.name} is not under the request's span`).toBeDefined()
    }
  }, 30_000)
})
