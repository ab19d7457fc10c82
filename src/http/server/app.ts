/**
 * The HTTP application: the contract's routes with their handlers and middlewares, the OpenAPI
 * document, the bundled reference UI, and the request-context middleware around everything.
 */
import * as NodeHttpServer from "@effect/platform-node/NodeHttpServer"
import { Context, Effect, Layer, Scope } from "effect"
import { HttpRouter, HttpServer, type HttpServerRequest, type HttpServerResponse } from "effect/http"
import { HttpApiBuilder } from "effect/http-api"
import { createServer, STATUS_CODES } from "node:http"
import type { Duplex } from "node:stream"
import { envelopeBody } from "../errors.ts"
import { watchRequestBodyIdle } from "./request-body-idle.ts"
import { ApiKeys } from "../../auth/api-keys.ts"
import { Projects } from "../../auth/projects.ts"
import { AccountsLive } from "../../accounts/accounts-live.ts"
import { AppConfig } from "../../config/config.ts"
import { WebAgentApi } from "../api/api.ts"
import { MAX_PATH_PARAM_LENGTH } from "../api/schemas.ts"
import { AuthenticationLive } from "../middleware/authentication.ts"
import { IdempotencyLive } from "../middleware/idempotency.ts"
import { IdempotencyKeys } from "../../auth/idempotency-keys.ts"
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
import { SecretsHandlers } from "./secrets.ts"
import { ProjectSecrets } from "../../secrets/service.ts"
import { CacheScriptsHandlers } from "./cache-scripts.ts"
import { CacheScripts } from "../../do-anything/cache-scripts.ts"
import { SkillsHandlers } from "./skills.ts"
import { Skills } from "../../do-anything/skills.ts"
import { SafetyHandlers } from "./safety.ts"
import { SafetyPolicies } from "../../safety/service.ts"
import { InboxHandlers } from "./inbox.ts"
import { InboxMessagesHandlers } from "./inbox-messages.ts"
import { MailInboxStore } from "../../mail/inbound/inbox-store.ts"
import { SessionInboxes } from "../../mail/inbound/session-inbox.ts"
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
import { DocsRoute } from "./docs.ts"
import { SchedulesHandlers } from "./schedules.ts"
import { AccountHandlers, AuthPublicHandlers, BugReportsHandlers, TenantsHandlers } from "./accounts.ts"
import { ConsoleAuthLive } from "../middleware/console-session.ts"
import { AccessKeysHandlers, ConsentRoutes, DelegationServiceHandlers, DelegationsHandlers, SignedRequestLive } from "./delegation.ts"
import { Delegations } from "../../delegation/delegations.ts"
import { SqlClient } from "effect/sql"
import { Authentication, Idempotency, RateLimit } from "../api/security.ts"
import { ConsoleAuth } from "../api/accounts-security.ts"
import { SignedRequest } from "../api/delegation.ts"
import { TakeControl } from "../../control/take-control.ts"
import { ControlRelay } from "../../do-anything/control-relay.ts"
import { Users } from "../../accounts/users.ts"
import { Sso } from "../../accounts/sso.ts"
import { AccountMail } from "../../accounts/account-mail.ts"
import { Tenants } from "../../accounts/tenants.ts"
import { BugReports } from "../../accounts/bug-reports.ts"
import { Callbacks } from "../../webhooks/callbacks.ts"
import { RunEvents } from "../../runs/events.ts"
import { NodeMetrics, Readiness } from "../../observability/probes.ts"
import { ReadinessLive } from "../../store/readiness.ts"
import { NodeMetricsLive } from "../../cluster/node-metrics.ts"
import { Screenshots } from "../../runs/screenshots.ts"
import { Recordings } from "../../recordings/service.ts"
import { Workspaces } from "../../workspaces/service.ts"
import { Sessions } from "../../do-anything/service.ts"
import { Search } from "../../search/service.ts"
import { Research } from "../../research/service.ts"
import { WebhookEndpoints } from "../../webhooks/webhook-endpoints.ts"
import { Inbox } from "../../webhooks/inbox.ts"
import { MonitorStore } from "../../track/monitor-store.ts"
import { Monitors } from "../../track/service.ts"
import { Profiles } from "../../do-anything/profiles.ts"
import { SessionSchedules } from "../../do-anything/schedules.ts"

/** The services a request may take from its context while it is answered (see RequestBase). */
type RequestServices = AppConfig

/**
 * The context every request fiber starts from: what the process-level layers below it provide
 * (the config, the log batch and logger, the runtime's references), captured where main.ts builds
 * it. Handlers take the application's services when their group is built (the house style), so a
 * request does not carry the ~50 services of the application; HttpApiBuilder copies the request's
 * context into a new map for every request (see withServices), at a cost in proportion to its
 * size. `serveFromBase` checks at compile time that the routes need nothing else while they answer.
 */
export class RequestBase extends Context.Service<RequestBase, Context.Context<RequestServices>>()("wa/http/RequestBase") {
  static readonly layer = Layer.effect(RequestBase, Effect.map(Effect.context<RequestServices>(), Context.omit(Scope.Scope)))
}

/** The identifiers of a list of services. */
type Identifiers<S extends ReadonlyArray<Context.Key<any, any>>> = { [K in keyof S]: S[K] extends Context.Key<infer I, any> ? I : never }[number]
type MissingServices<R, S extends ReadonlyArray<Context.Key<any, any>>> = Exclude<R, Identifiers<S> | RequestServices | HttpRouter.Request<any, any>>

/**
 * Builds a handler group in RequestBase plus `services` only. HttpApiBuilder keeps the context a
 * group was built in and merges it into the context of every request the group answers, copying
 * it into a new map: built in the application's whole context, that was ~58 services per request
 * (~8 % of the CPU of an authenticated read). A service the group's layer needs that `services`
 * leaves out does not compile; the error names it.
 */
const withServices = <A, E, R, const S extends ReadonlyArray<Context.Key<any, any>>>(
  group: Layer.Layer<A, E, R>,
  services: S & NoInfer<[MissingServices<R, S>] extends [never] ? unknown : { readonly "also needed to build this group": MissingServices<R, S> }>
): Layer.Layer<A, E, R> =>
  Layer.effectContext(Effect.gen(function*() {
    const context = yield* Effect.context<Layer.CurrentMemoMap>()
    const scope = yield* Scope.Scope
    const base: Context.Context<any> = Context.add(Context.add(yield* RequestBase, Scope.Scope, scope), Layer.CurrentMemoMap, Context.get(context, Layer.CurrentMemoMap))
    const only = services.reduce((picked: Context.Context<any>, key) => Context.add(picked, key, Context.getUnsafe(context, key)), base)
    return yield* Effect.updateContext(Layer.buildWithScope(group, scope), (_: Context.Context<never>) => only as Context.Context<R>)
  })) as Layer.Layer<A, E, R>

/** The middlewares a group of each kind is built with (their layers are provided to the groups below). */
const projectMiddlewares = [Authentication, RateLimit, Idempotency] as const
const consoleMiddlewares = [ConsoleAuth, RateLimit, Idempotency] as const
const signedMiddlewares = [SignedRequest, RateLimit, Idempotency] as const

/** The middlewares of project endpoints, provided *to* each group's handler layer. */
const ProjectMiddlewares = Layer.mergeAll(AuthenticationLive, RateLimitLive, IdempotencyLive).pipe(
  Layer.provide(Layer.mergeAll(RateLimitStore.layer, IdempotencyKeys.layer))
)

const ApiRoutes = HttpApiBuilder.layer(WebAgentApi, { openapiPath: "/openapi.json" }).pipe(
  Layer.provide([
    withServices(SystemHandlers, [Readiness]).pipe(Layer.provide(ReadinessLive)),
    withServices(MetricsHandlers, [NodeMetrics]).pipe(Layer.provide(NodeMetricsLive)),
    withServices(MediaHandlers, [Screenshots]).pipe(Layer.provide(Screenshots.layer)),
    withServices(WorkspaceDownloadHandlers, [Workspaces]).pipe(Layer.provide(Workspaces.layer)),
    withServices(ControlHandlers, [TakeControl]),
    withServices(RecordingReplayHandlers, [Recordings]).pipe(Layer.provide(Recordings.layer)),
    withServices(StripeWebhookHandlers, [SqlClient.SqlClient]),
    withServices(AuthPublicHandlers, [Users, Sso, Tenants, AccountMail]),
    withServices(DelegationServiceHandlers, [...signedMiddlewares, Delegations]).pipe(Layer.provide(Layer.mergeAll(SignedRequestLive, ProjectMiddlewares))),
    Layer.mergeAll(withServices(AccessKeysHandlers, [...consoleMiddlewares, Delegations]), withServices(DelegationsHandlers, [...consoleMiddlewares, Delegations])).pipe(Layer.provide(Layer.mergeAll(ConsoleAuthLive, ProjectMiddlewares))),
    Layer.mergeAll(withServices(AccountHandlers, [...consoleMiddlewares, Users, Tenants, AccountMail]), withServices(TenantsHandlers, [...consoleMiddlewares, Tenants])).pipe(Layer.provide(Layer.mergeAll(ConsoleAuthLive, ProjectMiddlewares))),
    Layer.mergeAll(
      withServices(ApiKeysHandlers, [...projectMiddlewares, ApiKeys, SqlClient.SqlClient]),
      withServices(ProjectHandlers, [...projectMiddlewares, ApiKeys, Projects]),
      withServices(BillingHandlers, [...projectMiddlewares, SqlClient.SqlClient]),
      withServices(WebhookDeliveriesHandlers, [...projectMiddlewares, Callbacks]),
      withServices(DoAnythingHandlers, [...projectMiddlewares, RunEvents, Recordings, Sessions, SafetyPolicies]).pipe(Layer.provide(SafetyPolicies.layer)),
      withServices(DoAnythingFlatHandlers, [...projectMiddlewares, RunEvents, Recordings, Sessions, SafetyPolicies]).pipe(Layer.provide(SafetyPolicies.layer)),
      withServices(WebSearchHandlers, [...projectMiddlewares, RunEvents, Search]),
      withServices(WebSearchFlatHandlers, [...projectMiddlewares, RunEvents, Search]),
      withServices(DeepResearchHandlers, [...projectMiddlewares, RunEvents, Research]),
      withServices(DeepResearchFlatHandlers, [...projectMiddlewares, RunEvents, Research]),
      withServices(DeepResearchStandaloneHandlers, [...projectMiddlewares, RunEvents, Research]),
      withServices(WebhookEndpointsHandlers, [...projectMiddlewares, ApiKeys, WebhookEndpoints]),
      withServices(SecretsHandlers, [...projectMiddlewares, ApiKeys, ProjectSecrets]).pipe(Layer.provide(ProjectSecrets.layer)),
      withServices(CacheScriptsHandlers, [...projectMiddlewares, CacheScripts]).pipe(Layer.provide(CacheScripts.layer)),
      withServices(SkillsHandlers, [...projectMiddlewares, Skills]).pipe(Layer.provide(Skills.layer)),
      withServices(SafetyHandlers, [...projectMiddlewares, ApiKeys, SafetyPolicies]).pipe(Layer.provide(SafetyPolicies.layer)),
      withServices(InboxHandlers, [...projectMiddlewares, Inbox]),
      withServices(InboxMessagesHandlers, [...projectMiddlewares, SessionInboxes]).pipe(Layer.provide(SessionInboxes.layer.pipe(Layer.provide(MailInboxStore.layer)))),
      withServices(TrackHandlers, [...projectMiddlewares, RunEvents, MonitorStore, Monitors]),
      withServices(TrackFlatHandlers, [...projectMiddlewares, RunEvents, MonitorStore, Monitors]),
      withServices(WorkspacesHandlers, [...projectMiddlewares, Workspaces]),
      withServices(WorkspaceUploadHandlers, [...projectMiddlewares, Workspaces]),
      withServices(ProfilesHandlers, [...projectMiddlewares, Profiles]),
      withServices(DoAnythingArtifactsHandlers, [...projectMiddlewares, Recordings, Sessions]),
      withServices(BillingPlansHandlers, [...projectMiddlewares, SqlClient.SqlClient]),
      withServices(SchedulesHandlers, [...projectMiddlewares, SessionSchedules, SafetyPolicies]).pipe(Layer.provide(SafetyPolicies.layer)),
      withServices(BugReportsHandlers, [...projectMiddlewares, BugReports])
    ).pipe(
      Layer.provide(ProjectMiddlewares),
      Layer.provide(Layer.mergeAll(RunEvents.layer, Recordings.layer, Workspaces.layer))
    )
  ])
)

const Routes = Layer.mergeAll(
  ApiRoutes,
  DocsRoute,
  ControlSocketRoute.pipe(Layer.provide(ControlRelay.layer)),
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

const makeNodeServer = (headersTimeoutSeconds: number, requestBodyIdleSeconds: number) => () => {
  const headersTimeout = headersTimeoutSeconds * 1000
  const server = createServer({
    headersTimeout,
    // A body still arriving is not cut; one that stops is (watchRequestBodyIdle). The total bound
    // is only a backstop of a day: with requestTimeout 0 Node no longer dropped an event-stream
    // client that stopped reading (test/security/request-limits.test.ts, event streams).
    requestTimeout: 86_400_000,
    // How often Node looks for connections past the headers timeout.
    connectionsCheckingInterval: Math.min(headersTimeout, 30_000)
  })
  watchRequestBodyIdle(server, requestBodyIdleSeconds)
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
  // The routes are built over the server's platform services (file system, paths, ETags), and
  // only then is the port bound, with the handler in place at once: a connection accepted on a
  // bound port before its handler exists gets no answer at all (it hung for up to a second while
  // the routes were built, and a /readyz probe in that window waited out its timeout).
  const router = HttpRouter.toHttpEffect(Routes).pipe(Effect.provideService(HttpRouter.RouterConfig, { maxParamLength: MAX_PATH_PARAM_LENGTH }))
  const server = NodeHttpServer.layerServer(makeNodeServer(config.headersTimeoutSeconds, config.requestBodyIdleSeconds), {
    port: config.port,
    host: config.host,
    gracefulShutdownTimeout: "5 seconds"
  })
  return Layer.unwrap(Effect.map(router, (handler) => serveFromBase(handler).pipe(Layer.provideMerge(server))))
})).pipe(Layer.provideMerge(NodeHttpServer.layerHttpServices))

export const logListening = Effect.gen(function*() {
  const server = yield* HttpServer.HttpServer
  const address = server.address
  if (address._tag === "InetAddressV4" || address._tag === "InetAddressV6") {
    const ip = address.address.toString()
    const host = address._tag === "InetAddressV6" ? `[${ip}]` : ip
    yield* Effect.logInfo("listening").pipe(Effect.annotateLogs({ url: `http://${host}:${address.port}` }))
  }
})
