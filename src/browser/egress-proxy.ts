/**
 * Egress proxy of one browser context: every connection the context makes (documents,
 * redirect hops, sub-resources, fetch/XHR, WebSockets) goes through it, and it refuses targets
 * that resolve to private, loopback, link-local or metadata addresses.
 *
 * Why a proxy besides the route guard: Playwright does not route redirect hops, so a public page
 * redirecting to http://169.254.169.254/ would be fetched by the browser before any handler
 * could object. Here the check happens when the connection is opened, and the proxy connects to
 * the very address it checked, so DNS rebinding between check and connect does not help either.
 *
 * HTTPS and WebSockets arrive as CONNECT host:port and are tunnelled unchanged (TLS stays
 * end-to-end between Chromium and the site); plain HTTP arrives as absolute-URL requests and is
 * forwarded. Only usable with a locally launched browser (a remote CDP browser cannot reach it).
 */
import { Effect } from "effect"
import { lookup } from "node:dns/promises"
import { createServer, request as httpRequest, type IncomingMessage, type ServerResponse } from "node:http"
import { type AddressInfo, connect, isIP, type Socket } from "node:net"
import type { Duplex } from "node:stream"
import { resolvePublicAddresses } from "../net/private-address.ts"
import { NavigationRefused } from "./errors.ts"

export interface EgressProxy {
  /** `http://127.0.0.1:PORT`, for the context's `proxy.server`. */
  readonly server: string
  readonly close: () => Promise<void>
}

export interface EgressProxyOptions {
  /** Origins exempt from the check (`scheme://host:port`), as in the navigation guard. */
  readonly allowedOrigins?: ReadonlyArray<string> | undefined
  /** Called with every refused target (the lease reports it to the agent). */
  readonly onRefused: (refusal: NavigationRefused) => void
}

const hopByHop = new Set([
  "connection", "proxy-connection", "keep-alive", "proxy-authorization", "proxy-authenticate", "te", "trailer",
  "transfer-encoding", "upgrade"
])

/**
 * Resolves `url`'s host and returns an address to connect to, or the refusal. Unless the origin
 * is exempt, every address the host resolves to is checked (`resolvePublicAddresses`, the
 * service's one classifier, which decides on the address bytes, so `[::ffff:127.0.0.1]` is
 * loopback) and the connection goes to one of those very addresses, whatever DNS says a moment
 * later. An exempt origin is matched on its exact `host:port` spelling: another spelling of the
 * same address is not exempt.
 */
const resolveAllowed = async (url: string, allowed: ReadonlySet<string>): Promise<{ address: string } | { refused: NavigationRefused }> => {
  const parsed = new URL(url)
  const host = parsed.hostname.replace(/^\[|\]$/g, "")
  const port = parsed.port || (parsed.protocol === "https:" || parsed.protocol === "wss:" ? "443" : "80")
  if (allowed.has(`${host}:${port}`)) {
    const addresses = isIP(host) !== 0 ? [host] : (await lookup(host, { all: true, verbatim: true })).map((r) => r.address)
    return { address: addresses[0]! }
  }
  const verdict = await Effect.runPromise(Effect.result(resolvePublicAddresses(url)))
  if (verdict._tag === "Failure") {
    const e = verdict.failure
    return { refused: new NavigationRefused({ url: e.url, address: e.address, message: `connection refused: ${e.message}` }) }
  }
  return { address: verdict.success[0]! }
}

const exemptKeys = (origins: ReadonlyArray<string>): ReadonlySet<string> =>
  new Set(origins.flatMap((origin) => {
    try {
      const u = new URL(origin)
      return [`${u.hostname.replace(/^\[|\]$/g, "")}:${u.port || (u.protocol === "https:" ? "443" : "80")}`]
    } catch {
      return []
    }
  }))

export const startEgressProxy = async (options: EgressProxyOptions): Promise<EgressProxy> => {
  const allowed = exemptKeys(options.allowedOrigins ?? [])
  const sockets = new Set<Duplex>()
  const track = (socket: Duplex) => {
    sockets.add(socket)
    socket.once("close", () => sockets.delete(socket))
  }

  const refuse = (refusal: NavigationRefused) => {
    options.onRefused(refusal)
    return refusal
  }

  const onRequest = (req: IncomingMessage, res: ServerResponse) => {
    const url = req.url ?? ""
    if (!/^http:\/\//i.test(url)) {
      res.writeHead(400, { "content-type": "text/plain" }).end("absolute http:// URL expected")
      return
    }
    resolveAllowed(url, allowed).then((verdict) => {
      if ("refused" in verdict) {
        refuse(verdict.refused)
        res.writeHead(403, { "content-type": "text/plain" }).end(verdict.refused.message)
        return
      }
      const target = new URL(url)
      const headers: Record<string, string | Array<string>> = {}
      for (const [name, value] of Object.entries(req.headers)) {
        if (value !== undefined && !hopByHop.has(name.toLowerCase())) headers[name] = value
      }
      const upstream = httpRequest({
        host: verdict.address,
        port: Number(target.port || 80),
        method: req.method,
        path: `${target.pathname}${target.search}`,
        headers
      }, (upstreamRes) => {
        const responseHeaders: Record<string, string | Array<string>> = {}
        for (const [name, value] of Object.entries(upstreamRes.headers)) {
          if (value !== undefined && !hopByHop.has(name.toLowerCase())) responseHeaders[name] = value
        }
        res.writeHead(upstreamRes.statusCode ?? 502, upstreamRes.statusMessage, responseHeaders)
        upstreamRes.pipe(res)
      })
      upstream.on("error", (error) => {
        if (!res.headersSent) res.writeHead(502, { "content-type": "text/plain" })
        res.end(String(error))
      })
      req.pipe(upstream)
    }).catch((error: unknown) => {
      if (!res.headersSent) res.writeHead(502, { "content-type": "text/plain" })
      res.end(String(error))
    })
  }

  const onConnect = (req: IncomingMessage, client: Duplex, head: Buffer) => {
    track(client)
    client.on("error", () => client.destroy())
    const authority = req.url ?? ""
    const port = Number(authority.slice(authority.lastIndexOf(":") + 1))
    const scheme = port === 80 ? "http" : "https"
    resolveAllowed(`${scheme}://${authority}/`, allowed).then((verdict) => {
      if ("refused" in verdict) {
        refuse(verdict.refused)
        client.end("HTTP/1.1 403 Forbidden\r\ncontent-length: 0\r\n\r\n")
        return
      }
      const upstream: Socket = connect(port, verdict.address, () => {
        client.write("HTTP/1.1 200 Connection Established\r\n\r\n")
        if (head.length > 0) upstream.write(head)
        upstream.pipe(client)
        client.pipe(upstream)
      })
      track(upstream)
      upstream.on("error", () => {
        client.end("HTTP/1.1 502 Bad Gateway\r\ncontent-length: 0\r\n\r\n")
      })
    }).catch(() => client.end("HTTP/1.1 502 Bad Gateway\r\ncontent-length: 0\r\n\r\n"))
  }

  const server = createServer(onRequest)
  server.on("connect", onConnect)
  server.on("connection", track)
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject)
    server.listen(0, "127.0.0.1", () => resolve())
  })
  const { port } = server.address() as AddressInfo
  return {
    server: `http://127.0.0.1:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy()
        server.close(() => resolve())
      })
  }
}
