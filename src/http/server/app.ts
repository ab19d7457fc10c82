/**
 * The HTTP application: the contract's routes with their handlers and middlewares, the OpenAPI
 * document, the bundled reference UI, and the request-context middleware around everything.
 */
import { NodeHttpServer } from "@effect/platform-node"
import { Context, Effect, Layer, Scope } from "effect"
import { HttpRouter, HttpServer, type HttpServerRequest, type HttpServerResponse } from "effect/http"
import { HttpApiBuilder, HttpApiScalar } from "effect/http-api"
import { createServer, STATUS_CODES } from "node:http"
import type { Duplex } from "node:stream"
import { envelopeBody } from "../errors.ts"
import { ApiKeys } from "../../auth/api-keys.ts"
import { AccountsLive } from "../../accounts/accounts-live.ts"
import { AppConfig } from "../../config/config.ts"
import { WebAgentApi } from "../api/api.ts"
import { AuthenticationLive } from "../middleware/authentication.ts"
import { IdempotencyLive } from "../middleware/idempotency.ts"
import { RateLimitLive } from "../middleware/rate-limit.ts"
import { RateLimitStore } from "../middleware/rate-limit-store.ts"
import { requestContextMiddleware } from "../middleware/request-context.ts"
import { ApiKeysHandlers } from "./api-keys.ts"
import { ControlHandlers, ControlSocketRoute } from "./control.ts"
import { DoAnythingFlatHandlers, DoAnythingHandlers, MediaHandlers } from "./do-anything.ts"
import { ProjectHandlers } from "./project.ts"
import { BillingHandlers } from "./billing.ts"
import { WebhookDeliveriesHandlers } from "./webhook-deliveries.ts"
import { WebhookEndpointsHandlers } from "./webhook-endpoints.ts"
import { InboxHandlers } from "./inbox.ts"
import { TrackFlatHandlers, TrackHandlers } from "./track.ts"
import { SystemHandlers } from "./system.ts"
import { WorkspaceDownloadHandlers, WorkspacesHandlers, WorkspaceUploadHandlers } from "./workspaces.ts"
import { ProfilesHandlers } from "./profiles.ts"
import { MetricsHandlers } from "./metrics.ts"
import { WebSearchFlatHandlers, WebSearchHandlers } from "./web-search.ts"
import { DeepResearchFlatHandlers, DeepResearchHandlers, DeepResearchStandaloneHandlers } from "./deep-research.ts"
import { DoAnythingArtifactsHandlers, RecordingReplayHandlers } from "./recordings.ts"
import { BillingPlansHandlers, StripeWebhookHandlers } from "./billing-plans.ts"
import { ConsoleRoute } from "./console.ts"
import { SchedulesHandlers } from "./schedules.ts"
import { AccountHandlers, AuthPublicHandlers, BugReportsHandlers, TenantsHandlers } from "./accounts.ts"
import { ConsoleAuthLive } from "../middleware/console-session.ts"
import { AccessKeysHandlers, ConsentRoutes, DelegationServiceHandlers, DelegationsHandlers, SignedRequestLive } from "./delegation.ts"
import { Delegations } from "../../delegation/delegations.ts"

/** The middlewares of project endpoints, provided *to* each group's handler layer. */
const ProjectMiddlewares = Layer.mergeAll(AuthenticationLive, RateLimitLive, IdempotencyLive).pipe(
  Layer.provide(RateLimitStore.layer)
)

const ApiRoutes = HttpApiBuilder.layer(WebAgentApi, { openapiPath: "/openapi.json" }).pipe(
  Layer.provide([
    SystemHandlers,
    MetricsHandlers,
    MediaHandlers,
    WorkspaceDownloadHandlers,
    ControlHandlers,
    RecordingReplayHandlers,
    StripeWebhookHandlers,
    AuthPublicHandlers,
    DelegationServiceHandlers.pipe(Layer.provide(Layer.mergeAll(SignedRequestLive, ProjectMiddlewares))),
    Layer.mergeAll(AccessKeysHandlers, DelegationsHandlers).pipe(Layer.provide(Layer.mergeAll(ConsoleAuthLive, ProjectMiddlewares))),
    Layer.mergeAll(AccountHandlers, TenantsHandlers).pipe(Layer.provide(Layer.mergeAll(ConsoleAuthLive, ProjectMiddlewares))),
    Layer.mergeAll(
      ApiKeysHandlers,
      ProjectHandlers,
      BillingHandlers,
      WebhookDeliveriesHandlers,
      DoAnythingHandlers,
      DoAnythingFlatHandlers,
      WebSearchHandlers,
      WebSearchFlatHandlers,
      DeepResearchHandlers,
      DeepResearchFlatHandlers,
      DeepResearchStandaloneHandlers,
      WebhookEndpointsHandlers,
      InboxHandlers,
      TrackHandlers,
      TrackFlatHandlers,
      WorkspacesHandlers,
      WorkspaceUploadHandlers,
      ProfilesHandlers,
      DoAnythingArtifactsHandlers,
      BillingPlansHandlers,
      SchedulesHandlers,
      BugReportsHandlers
    ).pipe(
      Layer.provide(ProjectMiddlewares)
    )
  ])
)

const Routes = Layer.mergeAll(
  ApiRoutes,
  HttpApiScalar.layer(WebAgentApi, { path: "/docs" }),
  ControlSocketRoute,
  ConsoleRoute,
  ConsentRoutes,
  requestContextMiddleware(WebAgentApi)
).pipe(Layer.provide(Delegations.layer), Layer.provide(Layer.mergeAll(ApiKeys.layer, AccountsLive)))

/**
 * Errors Node answers itself, before a request reaches the router (header timeouts of slow
 * clients, unparsable requests, oversized headers), answered in the envelope too.
 */
const clientErrorResponse = (error: NodeJS.ErrnoException): { status: number; code: string; detail: string } =>
  error.code === "ERR_HTTP_REQUEST_TIMEOUT"
    ? { status: 408, code: "request_timeout", detail: "the request headers or body did not arrive in time" }
    : error.code === "HPE_HEADER_OVERFLOW"
    ? { status: 431, code: "request_header_fields_too_large", detail: "the request headers are too large" }
    : { status: 400, code: "bad_request", detail: "the request could not be parsed as HTTP" }

const makeNodeServer = (headersTimeoutSeconds: number) => () => {
  const headersTimeout = headersTimeoutSeconds * 1000
  const server = createServer({
    headersTimeout,
    requestTimeout: Math.max(headersTimeout, 60_000),
    // How often Node looks for connections past those timeouts.
    connectionsCheckingInterval: Math.min(headersTimeout, 30_000)
  })
  server.on("clientError", (error: NodeJS.ErrnoException, socket: Duplex) => {
    // A response is already under way (or the peer is gone): nothing can be said any more.
    if (!socket.writable || (socket as { _httpMessage?: unknown })._httpMessage) return socket.destroy()
    const { status, code, detail } = clientErrorResponse(error)
    const body = JSON.stringify(envelopeBody(code, detail))
    socket.end(
      `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\ncontent-type: application/json\r\n` +
        `content-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`
    )
  })
  return server
}

/** The services a request may take from its context while it is answered (see RequestBase). */
type RequestServices = AppConfig

/**
 * The context every request fiber starts from: what the process-level layers below it provide
 * (the config, the log batch and logger, the runtime's references), captured where main.ts builds
 * it. Handlers take the application's services when their group is built (the house style), so a
 * request does not carry the ~50 services of the application: HttpApiBuilder merges a group's
 * context into the request's for every request it hands to that group, copying both into a new
 * map, at a cost in proportion to their size. `serveFromBase` checks at compile time that the
 * routes need nothing else while they answer.
 */
export class RequestBase extends Context.Service<RequestBase, Context.Context<RequestServices>>()("wa/http/RequestBase") {
  static readonly layer = Layer.effect(RequestBase, Effect.map(Effect.context<RequestServices>(), Context.omit(Scope.Scope)))
}

/**
 * HttpRouter.serve, with request fibers that start from RequestBase instead of this layer's
 * context. The handler's type is the check: a route that needs another service while it answers
 * does not compile here; take the service when the group is built, or add it to RequestServices.
 */
const serveFromBase = (
  handler: Effect.Effect<HttpServerResponse.HttpServerResponse, unknown, Scope.Scope | HttpServerRequest.HttpServerRequest | RequestServices>
) =>
  Layer.effectDiscard(Effect.gen(function*() {
    const base = yield* RequestBase
    const scope = yield* Scope.Scope
    const server = yield* HttpServer.HttpServer
    yield* Effect.updateContext(server.serve(handler), (_: Context.Context<never>) => Context.add(base, Scope.Scope, scope))
  }))

/** Serves the API on WA_HOST:WA_PORT and logs the address it listens on (port 0 picks one). */
export const HttpLive = Layer.unwrap(Effect.gen(function*() {
  const config = yield* AppConfig
  // The routes are built over the server's platform services (file system, paths, ETags).
  return Layer.unwrap(Effect.map(HttpRouter.toHttpEffect(Routes), serveFromBase)).pipe(
    Layer.provideMerge(NodeHttpServer.layer(makeNodeServer(config.headersTimeoutSeconds), {
      port: config.port,
      host: config.host,
      gracefulShutdownTimeout: "5 seconds"
    }))
  )
}))

export const logListening = Effect.gen(function*() {
  const server = yield* HttpServer.HttpServer
  const address = server.address
  if (address._tag === "InetAddressV4" || address._tag === "InetAddressV6") {
    const ip = address.address.toString()
    const host = address._tag === "InetAddressV6" ? `[${ip}]` : ip
    yield* Effect.logInfo("listening").pipe(Effect.annotateLogs({ url: `http://${host}:${address.port}` }))
  }
})
