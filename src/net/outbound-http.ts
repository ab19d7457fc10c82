/**
 * The one HTTP client for addresses users give the service: the pages the Reader fetches
 * (src/reader/http-fetch.ts) and webhook targets (src/webhooks/callbacks.ts). Guarded, its
 * sockets resolve names through `publicLookup`, so a connection goes only to an address checked
 * at connect time: a name re-pointed at 127.0.0.1 after the URL was checked is refused, not
 * reached. It follows no redirects: a caller that does checks each hop itself. (The model, the
 * search engines and the trace exporter are addresses the operator configures, reached with
 * `FetchHttpClient`.)
 */
import * as NodeHttpClient from "@effect/platform-node/NodeHttpClient"
import { Effect } from "effect"
import { PrivateLookupError, publicLookup } from "./private-address.ts"

/** A node:http client of its own agent (closed with the scope); `guarded`: public addresses only. */
export const outboundHttpClient = (guarded: boolean) =>
  NodeHttpClient.makeAgent(guarded ? { lookup: publicLookup } : {}).pipe(
    Effect.flatMap((agent) => NodeHttpClient.makeNodeHttp.pipe(Effect.provideService(NodeHttpClient.HttpAgent, agent)))
  )

/** The refusal of a guarded socket, found in an HTTP client error's causes. */
export const refusedAtConnect = (error: unknown): PrivateLookupError | undefined => {
  for (let e: unknown = error, depth = 0; e !== undefined && e !== null && depth < 5; e = (e as { cause?: unknown }).cause, depth++) {
    if (e instanceof PrivateLookupError) return e
  }
  return undefined
}
