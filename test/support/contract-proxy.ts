/**
 * A loopback reverse proxy in front of the service whose every answer goes through the contract
 * hook (contract-hook.ts `checkExchange`), for the clients a test cannot hand a `fetch`: the `wa`
 * CLI and MCP subprocesses, given the proxy's URL as WA_URL. Requests and answers pass unchanged
 * (an event stream is streamed through, its status, content type and headers checked). A mismatch
 * cannot throw in the subprocess, so it is kept and `takeMismatches` hands it to the test:
 * `afterEach(() => expect(proxy.takeMismatches()).toEqual([]))` fails the test that caused it.
 */
import { createServer, type IncomingMessage } from "node:http"
import type { AddressInfo } from "node:net"
import { checkExchange } from "./contract-hook.ts"

export interface ContractProxy {
  readonly url: string
  /** The mismatches since the last call (each a description naming the exchange), emptied. */
  readonly takeMismatches: () => Array<string>
  readonly close: () => Promise<void>
}

/** Hop-by-hop and per-connection headers, not forwarded either way (RFC 9110 §7.6.1). */
const HOP = new Set(["connection", "keep-alive", "transfer-encoding", "upgrade", "proxy-connection", "te", "trailer", "host", "content-length"])

const readBody = (request: IncomingMessage) =>
  new Promise<Buffer>((resolve, reject) => {
    const chunks: Array<Buffer> = []
    request.on("data", (chunk: Buffer) => chunks.push(chunk))
    request.on("end", () => resolve(Buffer.concat(chunks)))
    request.on("error", reject)
  })

export const startContractProxy = async (serviceUrl: string): Promise<ContractProxy> => {
  const mismatches: Array<string> = []
  const check = (exchange: Parameters<typeof checkExchange>[1]) =>
    checkExchange(serviceUrl, exchange).catch((error: unknown) => {
      mismatches.push(error instanceof Error ? error.message : String(error))
    })
  const server = createServer((request, response) => {
    void (async () => {
      const method = request.method ?? "GET"
      const pathname = request.url ?? "/"
      const headers = new Headers()
      for (const [name, value] of Object.entries(request.headers)) {
        if (value === undefined || HOP.has(name)) continue
        for (const one of Array.isArray(value) ? value : [value]) headers.append(name, one)
      }
      const body = method === "GET" || method === "HEAD" ? undefined : await readBody(request)
      const controller = new AbortController()
      response.on("close", () => controller.abort())
      let answer: Response
      try {
        answer = await fetch(serviceUrl + pathname, {
          method, headers, redirect: "manual", signal: controller.signal,
          ...(body !== undefined && body.length > 0 ? { body: new Uint8Array(body) } : {})
        })
      } catch {
        response.destroy()
        return
      }
      const out: Record<string, Array<string>> = {}
      answer.headers.forEach((value, name) => {
        if (!HOP.has(name) && name !== "content-encoding") (out[name] ??= []).push(value)
      })
      const stream = (answer.headers.get("content-type") ?? "").split(";")[0]!.trim().toLowerCase() === "text/event-stream"
      if (stream) {
        await check({ method, pathname, status: answer.status, headers: answer.headers, text: undefined })
        response.writeHead(answer.status, out)
        response.flushHeaders()
        if (answer.body !== null) {
          const reader = answer.body.getReader()
          try {
            for (let read = await reader.read(); !read.done; read = await reader.read()) response.write(read.value)
          } catch {
            // The client or the service went away.
          }
        }
        response.end()
        return
      }
      const bytes = Buffer.from(await answer.arrayBuffer())
      await check({ method, pathname, status: answer.status, headers: answer.headers, text: bytes.toString("utf8") })
      response.writeHead(answer.status, out)
      response.end(bytes)
    })().catch(() => response.destroy())
  })
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    takeMismatches: () => mismatches.splice(0),
    close: () => new Promise<void>((resolve) => {
      server.closeAllConnections()
      server.close(() => resolve())
    })
  }
}
