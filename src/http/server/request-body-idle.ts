/**
 * The idle bound of request bodies. Node's `requestTimeout` bounds a request's total time, so a
 * large upload on a slow link that still makes progress was cut after it, with no answer. Here a
 * body is cut only when nothing of it arrived for `idleMs`, and the client gets a 408 in the
 * envelope (`request_timeout`, like the header timeout) before the connection closes.
 *
 * Requests whose body is still arriving sit in a set that one timer looks at every quarter of the
 * bound (so the cut comes between 1 and 1.25 times the bound after the last byte). Progress is the
 * socket's byte count, which grows while Node's parser reads the body without anything consuming
 * the stream. A body the handler has not read yet (bytes waiting in the request stream) is the
 * service's delay, not the client's, and counts as progress.
 */
import type { IncomingMessage, Server, ServerResponse } from "node:http"
import { envelopeBody } from "../errors.ts"

interface Arriving {
  readonly request: IncomingMessage
  readonly response: ServerResponse
  bytesRead: number
  lastProgress: number
}

const answerTimeout = (request: IncomingMessage, response: ServerResponse, idleSeconds: number) => {
  if (response.headersSent) {
    // An answer is under way: nothing can be said any more.
    request.destroy()
    return
  }
  // Once the answer is out, the body stream ends in an error: the handler waiting for the rest of
  // it stops waiting (and with it the request's fiber, which a shutdown would otherwise wait for).
  response.once("finish", () => request.destroy())
  const body = JSON.stringify(envelopeBody(
    "request_timeout",
    `the request body stopped arriving: nothing of it came for ${idleSeconds} s`,
    { idle_seconds: idleSeconds }
  ))
  // `connection: close`: the rest of the body is not read; the connection is not reused.
  response.writeHead(408, { "content-type": "application/json", "content-length": Buffer.byteLength(body), connection: "close" })
  response.end(body)
}

/** Answers 408 to requests whose body stops arriving for `idleSeconds`. */
export const watchRequestBodyIdle = (server: Server, idleSeconds: number) => {
  const idleMs = idleSeconds * 1000
  const arriving = new Set<Arriving>()
  let timer: ReturnType<typeof setInterval> | undefined

  const check = () => {
    const now = performance.now()
    for (const entry of arriving) {
      const { request, response } = entry
      if (request.complete || request.destroyed || response.writableEnded) {
        arriving.delete(entry)
        continue
      }
      const bytesRead = request.socket.bytesRead
      if (bytesRead !== entry.bytesRead || request.readableLength > 0) {
        entry.bytesRead = bytesRead
        entry.lastProgress = now
      } else if (now - entry.lastProgress >= idleMs) {
        arriving.delete(entry)
        answerTimeout(request, response, idleSeconds)
      }
    }
    if (arriving.size === 0 && timer !== undefined) {
      clearInterval(timer)
      timer = undefined
    }
  }

  server.on("request", (request: IncomingMessage, response: ServerResponse) => {
    // Most requests have no body, or all of it came with the headers.
    if (request.complete) return
    arriving.add({ request, response, bytesRead: request.socket.bytesRead, lastProgress: performance.now() })
    if (timer === undefined) {
      timer = setInterval(check, Math.max(50, idleMs / 4))
      timer.unref()
    }
  })
}
