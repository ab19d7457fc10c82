/**
 * Proxies on loopback that stand between a client and the real service, so tests can break the
 * path the way networks do: a TCP proxy whose connections can be cut mid-stream, and an HTTP proxy
 * that answers chosen requests itself (a 503, a 429 with Retry-After) before forwarding the rest.
 */
import { createServer as createHttpServer, request as httpRequest, type IncomingHttpHeaders } from "node:http"
import { createConnection, createServer, type AddressInfo, type Socket } from "node:net"

export interface TcpProxy {
  readonly url: string
  /** Destroys every open connection (both sides), as a dropped network path would. */
  readonly dropAll: () => number
  /**
   * Stops forwarding on every open connection without closing it (a path that silently loses
   * packets): only a reader's stall timeout notices. New connections flow normally.
   */
  readonly freezeAll: () => number
  readonly close: () => Promise<void>
}

export const startTcpProxy = async (target: string): Promise<TcpProxy> => {
  const { hostname, port } = new URL(target)
  const open = new Set<Socket>()
  const frozen = new Set<Socket>()
  const server = createServer((client) => {
    const upstream = createConnection({ host: hostname, port: Number(port) })
    open.add(client)
    open.add(upstream)
    client.on("close", () => frozen.delete(client))
    client.pipe(upstream)
    upstream.pipe(client)
    const close = () => {
      client.destroy()
      upstream.destroy()
      open.delete(client)
      open.delete(upstream)
    }
    client.on("error", close).on("close", close)
    upstream.on("error", close).on("close", close)
  })
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  const address = server.address() as AddressInfo
  return {
    url: `http://127.0.0.1:${address.port}`,
    dropAll: () => {
      const n = open.size
      for (const socket of open) socket.resetAndDestroy()
      open.clear()
      return n
    },
    freezeAll: () => {
      let n = 0
      for (const socket of open) {
        if (frozen.has(socket)) continue
        // Both directions stop: nothing read from either side is written to the other.
        socket.unpipe()
        socket.pause()
        frozen.add(socket)
        n++
      }
      return n
    },
    close: () => {
      for (const socket of open) socket.destroy()
      return new Promise((resolve) => server.close(() => resolve()))
    }
  }
}

export interface SeenRequest {
  readonly method: string
  readonly path: string
  readonly headers: IncomingHttpHeaders
  /** The status the proxy answered itself, or undefined when forwarded. */
  readonly injected: number | undefined
}

/** What to answer instead of forwarding: undefined forwards. */
export type Fault = (request: { method: string; path: string }) => { status: number; headers?: Record<string, string>; body?: unknown } | undefined

export interface FaultProxy {
  readonly url: string
  readonly seen: Array<SeenRequest>
  setFault: (fault: Fault | undefined) => void
  readonly close: () => Promise<void>
}

export const startFaultProxy = async (target: string): Promise<FaultProxy> => {
  const upstream = new URL(target)
  const seen: Array<SeenRequest> = []
  let fault: Fault | undefined
  const server = createHttpServer((req, res) => {
    const method = req.method ?? "GET"
    const path = req.url ?? "/"
    const injected = fault?.({ method, path })
    seen.push({ method, path, headers: req.headers, injected: injected?.status })
    if (injected !== undefined) {
      req.resume()
      res.writeHead(injected.status, { "content-type": "application/json", ...injected.headers })
      res.end(JSON.stringify(injected.body ?? { code: injected.status === 429 ? "rate_limit_exceeded" : "internal_error", detail: "injected by the test proxy", extra: {} }))
      return
    }
    const forward = httpRequest({ host: upstream.hostname, port: upstream.port, method, path, headers: req.headers }, (answer) => {
      res.writeHead(answer.statusCode ?? 502, answer.headers)
      answer.pipe(res)
    })
    forward.on("error", () => res.destroy())
    req.pipe(forward)
  })
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  const address = server.address() as AddressInfo
  return {
    url: `http://127.0.0.1:${address.port}`,
    seen,
    setFault: (next) => (fault = next),
    close: () => {
      server.closeAllConnections()
      return new Promise((resolve) => server.close(() => resolve()))
    }
  }
}
