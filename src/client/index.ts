/**
 * `web-agent-service/client`: the typed SDK of the web agent service, for Node and browsers.
 *
 * - `createClient({ baseUrl, token, projectId })` returns promise helpers (`runs`, `research`,
 *   `search`, `monitors`) and `api`, the typed client of every product endpoint generated from the
 *   HttpApi definition (Effect's HttpApiClient; each method returns an Effect).
 * - Every request carries the bearer token (an API key or a delegation token), every write an
 *   automatic Idempotency-Key, and 429/5xx/network errors are retried with the spec's backoff,
 *   honouring Retry-After (src/client/transport.ts).
 * - Event streams are async iterators that reconnect from Last-Event-ID and filter heartbeats
 *   (src/client/sse.ts); each product's stream yields its events as a union discriminated by
 *   `type`, the data of each typed by the contract's event schemas (src/domain/events.ts).
 * - Refusals are thrown as WebAgentError `{status, code, detail, extra}`.
 */
import { Context, Effect, Layer, Schema } from "effect"
import { FetchHttpClient } from "effect/http"
import { HttpApiClient, HttpApiMiddleware } from "effect/http-api"
import { HttpClientRequest } from "effect/http"
import { Authentication } from "../http/api/security.ts"
import { CreateRunRequest as CreateRunSchema } from "../domain/wire/do-anything.ts"
import { CreateResearchRequest as CreateResearchSchema } from "../domain/research.ts"
import { WebSearchRequest as WebSearchSchema } from "../domain/web-search.ts"
import { CreateMonitorRequest as CreateMonitorSchema, PatchMonitorRequest as PatchMonitorSchema } from "../domain/monitor.ts"
import { ClientApi } from "./api.ts"
import { WebAgentError } from "./errors.ts"
import { statusOf } from "../domain/api-errors.ts"
import { type DoAnythingEvent, followEvents, type MonitorEvent, type ResearchEvent, type StreamEvent, type StreamOptions, type WebSearchEvent } from "./sse.ts"
import { makeFetch, type RetryInfo, type RetryPolicy } from "./transport.ts"

export { ClientApi } from "./api.ts"
export { WebAgentError } from "./errors.ts"
export {
  type DoAnythingEvent,
  type EventPayload,
  followEvents,
  type HeartbeatEvent,
  type MonitorEvent,
  parseFrame,
  type ResearchEvent,
  type StreamEvent,
  type StreamEventOf,
  type StreamOptions,
  type TypedEvent,
  type WebSearchEvent
} from "./sse.ts"
export { backoffDelay, defaultRetryPolicy, makeFetch, retryAfterMs, type RetryInfo, type RetryPolicy } from "./transport.ts"

export interface ClientOptions {
  /** The service's address, e.g. http://127.0.0.1:8080 */
  readonly baseUrl: string
  /** An API key (`wa_...`) or a delegation token. */
  readonly token: string
  /** The project the token belongs to (`proj_...`): the project is part of every path. */
  readonly projectId: string
  readonly retry?: Partial<RetryPolicy> | undefined
  /** The fetch underneath (default globalThis.fetch). */
  readonly fetch?: typeof globalThis.fetch | undefined
  readonly onRetry?: ((info: RetryInfo) => void) | undefined
}

/** The typed client of the product endpoints (methods return Effects). */
export type Api = HttpApiClient.ForApi<typeof ClientApi>

type Schemas = typeof import("../domain/wire/do-anything.ts")
type ResearchSchemas = typeof import("../domain/wire/deep-research.ts")
type SearchSchemas = typeof import("../domain/wire/web-search.ts")
type TrackSchemas = typeof import("../domain/wire/track.ts")
export type Session = Schemas["SessionResponse"]["Type"]
export type Run = Schemas["RunResponse"]["Type"]
export type CreateRunRequest = Schemas["CreateRunRequest"]["Encoded"]
export type ResearchRun = ResearchSchemas["ResearchRunResponse"]["Type"]
export type CreateResearchRequest = typeof import("../domain/research.ts")["CreateResearchRequest"]["Encoded"]
export type SearchRun = SearchSchemas["WebSearchRunResponse"]["Type"]
export type WebSearchRequest = typeof import("../domain/web-search.ts")["WebSearchRequest"]["Encoded"]
export type Monitor = TrackSchemas["MonitorResponse"]["Type"]
export type CreatedMonitor = TrackSchemas["CreateMonitorResponse"]["Type"]
export type CreateMonitorRequest = typeof import("../domain/monitor.ts")["CreateMonitorRequest"]["Encoded"]

/** Terminal statuses under both conventions. */
export const TERMINAL_STATUSES: ReadonlySet<string> = new Set(["done", "succeeded", "failed", "canceled"])
const runEnded = (event: { readonly type: string }) => event.type === "run.completed"
const monitorEnded = (event: MonitorEvent) =>
  event.type === "monitor.status_changed" && (event.data.to === "completed" || event.data.to === "canceled")

/** Turns a failure of the typed client into a WebAgentError. */
const toWebAgentError = (error: unknown): Effect.Effect<WebAgentError> => {
  if (error instanceof WebAgentError) return Effect.succeed(error)
  const e = error as { _tag?: string; code?: unknown; detail?: unknown; extra?: unknown; reason?: any; message?: string }
  const status = statusOf(error)
  if (status !== undefined && typeof e?.code === "string") {
    return Effect.succeed(new WebAgentError(status, e.code, String(e.detail ?? ""), (e.extra ?? {}) as Record<string, unknown>))
  }
  if (Schema.isSchemaError(error)) {
    // The typed client checks a request against the contract before sending it.
    return Effect.succeed(new WebAgentError(422, "validation_error", error.message, { errors: [{ loc: [], msg: error.message, type: "client_side" }], client_side: true }))
  }
  // A status the endpoint does not declare (a 5xx after the retries, a 429 on a read): the
  // envelope is read from the body when there is one.
  const response = e?.reason?.response
  if (response !== undefined && typeof response.status === "number") {
    const status: number = response.status
    return Effect.map(Effect.option(response.text as Effect.Effect<string, unknown>), (text) => {
      const body = text._tag === "Some" ? text.value : ""
      try {
        const parsed = JSON.parse(body)
        if (typeof parsed?.code === "string") return new WebAgentError(status, parsed.code, String(parsed.detail ?? ""), parsed.extra ?? {})
      } catch {
        // not the envelope
      }
      return new WebAgentError(status, status >= 500 ? "internal_error" : "http_error", body.slice(0, 500))
    })
  }
  return Effect.succeed(new WebAgentError(0, "network_error", String(e?.reason?.description ?? e?.message ?? error)))
}

/**
 * A request body as the caller writes it (the wire form, defaults omitted), decoded with the
 * contract's schema: the defaults are filled and a bad field fails here, before any request.
 */
const decodePayload = <S extends Schema.Top>(schema: S, input: unknown): Effect.Effect<S["Type"], Schema.SchemaError, never> =>
  Schema.decodeUnknownEffect(schema as any)(input, { errors: "all", onExcessProperty: "error" }) as any

/** Runs one typed-client call as a promise that rejects with a WebAgentError. */
const run = <A, E>(effect: Effect.Effect<A, E>): Promise<A> =>
  Effect.runPromise(effect.pipe(Effect.catch((error) => Effect.flatMap(toWebAgentError(error), Effect.fail)))) .catch((error) => {
    throw error instanceof WebAgentError ? error : (error?.cause ?? error)
  })

/** The Authentication middleware of the contract, on the client side: sets the bearer token. */
const authenticationClient = (token: string) =>
  HttpApiMiddleware.layerClient(Authentication, ({ next, request }) => next(HttpClientRequest.bearerToken(request, token)))

/** The typed client as an Effect layer, for programs written with Effect. */
export class WebAgentApi extends Context.Service<WebAgentApi, Api>()("web-agent-service/client/WebAgentApi") {
  static readonly layer = (options: Omit<ClientOptions, "projectId">) =>
    Layer.effect(WebAgentApi, HttpApiClient.make(ClientApi, { baseUrl: options.baseUrl })).pipe(
      Layer.provide(authenticationClient(options.token)),
      Layer.provide(FetchHttpClient.layer),
      Layer.provide(Layer.succeed(FetchHttpClient.Fetch, makeFetch(options)))
    )
}

const asId = <B>(id: string) => id as unknown as B

/** `E`: the events of the product's stream (DoAnythingEvent, ResearchEvent, WebSearchEvent). */
export interface WaitOptions<E extends StreamEvent = StreamEvent> {
  /** Every event as it arrives (heartbeats filtered). */
  readonly onEvent?: ((event: E) => void | Promise<void>) | undefined
  readonly signal?: AbortSignal | undefined
  readonly stream?: Omit<StreamOptions<E>, "signal" | "isLast"> | undefined
}

export interface ResearchWaitOptions extends WaitOptions<ResearchEvent> {
  /**
   * Decides an outline approval request: return `"approve"`, `{action: "approve_with_edits", edits}`
   * or anything the intervene endpoint accepts; undefined leaves it unanswered. Without it the run
   * waits (another client may answer).
   */
  readonly onOutline?: ((request: { readonly requestId: string; readonly prompt: unknown; readonly outline: unknown; readonly run: ResearchRun }) => unknown | Promise<unknown>) | undefined
}

export const createClient = (options: ClientOptions) => new WebAgentClient(options)

export class WebAgentClient {
  /** The typed client of every product endpoint (methods return Effects; run them with Effect.runPromise). */
  readonly api: Api
  /** fetch with the token, idempotency keys and retries, for anything the helpers do not cover. */
  readonly fetch: typeof globalThis.fetch
  readonly baseUrl: string
  readonly projectId: string

  readonly options: ClientOptions

  constructor(options: ClientOptions) {
    this.options = options
    this.baseUrl = options.baseUrl.replace(/\/+$/, "")
    this.projectId = options.projectId
    this.fetch = makeFetch(options)
    this.api = Effect.runSync(Effect.gen(function*() {
      return yield* WebAgentApi
    }).pipe(Effect.provide(WebAgentApi.layer({ ...options, baseUrl: this.baseUrl }))))
  }

  private get pid() {
    return { pid: this.projectId }
  }

  /** Follows an events endpoint (a path under the base URL); `E`: what it streams, if known (any frame by default). */
  events<E extends StreamEvent = StreamEvent>(path: string, options: StreamOptions<E> = {}): AsyncGenerator<E, void, undefined> {
    return followEvents<E>(this.fetch, this.baseUrl + path, options)
  }

  /** DoAnything: sessions holding runs (Convention A). */
  readonly runs = {
    /** Creates a session with its first run; the run is `session.runs[0]` (id also in latest_run_id). */
    create: (body: CreateRunRequest): Promise<Session> =>
      run(Effect.flatMap(decodePayload(CreateRunSchema, body), (payload) => this.api.do_anything.createSession({ params: this.pid, payload }))),
    /** A follow-up run in a session whose previous run ended. */
    createInSession: (sessionId: string, body: CreateRunRequest): Promise<Run> =>
      run(Effect.flatMap(decodePayload(CreateRunSchema, body), (payload) => this.api.do_anything.createRun({ params: { ...this.pid, sid: asId(sessionId) }, payload }))),
    get: (sessionId: string, runId: string): Promise<Run> =>
      run(this.api.do_anything.getRun({ params: { ...this.pid, sid: asId(sessionId), rid: asId(runId) } })),
    events: (sessionId: string, runId: string, stream: StreamOptions<DoAnythingEvent> = {}) =>
      this.events<DoAnythingEvent>(`/v1/projects/${this.projectId}/do_anything/sessions/${sessionId}/runs/${runId}/events`, { isLast: runEnded, ...stream }),
    /** Follows the run's events until it ends, then returns the run. */
    wait: async (sessionId: string, runId: string, wait: WaitOptions<DoAnythingEvent> = {}): Promise<Run> => {
      for await (const event of this.runs.events(sessionId, runId, { ...wait.stream, ...(wait.signal ? { signal: wait.signal } : {}) })) {
        await wait.onEvent?.(event)
      }
      return this.runs.get(sessionId, runId)
    },
    /** Creates a session with one run and waits for the run to end. */
    createAndWait: async (body: CreateRunRequest, wait: WaitOptions<DoAnythingEvent> = {}): Promise<{ session: Session; run: Run }> => {
      const session = await this.runs.create(body)
      const finished = await this.runs.wait(session.id, session.latest_run_id!, wait)
      return { session, run: finished }
    },
    /** Answers a run.input_request (intervene, kind answer_input_request). */
    answer: (sessionId: string, runId: string, inputRequestId: string, response: unknown) =>
      run(this.api.do_anything.intervene({
        params: { ...this.pid, sid: asId(sessionId), rid: asId(runId) },
        payload: { kind: "answer_input_request", input_request_id: asId(inputRequestId), response }
      })),
    message: (sessionId: string, runId: string, content: string) =>
      run(this.api.do_anything.message({ params: { ...this.pid, sid: asId(sessionId), rid: asId(runId) }, payload: { content } })),
    cancel: (sessionId: string, runId: string, reason?: string) =>
      run(this.api.do_anything.cancel({ params: { ...this.pid, sid: asId(sessionId), rid: asId(runId) }, payload: reason === undefined ? {} : { reason } })),
    closeSession: (sessionId: string) =>
      run(this.api.do_anything.closeSession({ params: { ...this.pid, sid: asId(sessionId) } }))
  }

  /** DeepResearch. */
  readonly research = {
    create: (body: CreateResearchRequest): Promise<ResearchRun> =>
      run(Effect.flatMap(decodePayload(CreateResearchSchema, body), (payload) => this.api.deep_research.createRun({ params: this.pid, payload }))),
    get: (runId: string): Promise<ResearchRun> =>
      run(this.api.deep_research.getRun({ params: { ...this.pid, rid: asId(runId) } })),
    events: (runId: string, stream: StreamOptions<ResearchEvent> = {}) =>
      this.events<ResearchEvent>(`/v1/projects/${this.projectId}/deep_research/runs/${runId}/events`, { isLast: runEnded, ...stream }),
    /** Answers the outline approval request (`"approve"` by default). */
    approve: (runId: string, requestId: string, response: unknown = "approve"): Promise<ResearchRun> =>
      run(this.api.deep_research.intervene({ params: { ...this.pid, rid: asId(runId) }, payload: { request_id: asId(requestId), response } })),
    cancel: (runId: string, reason?: string): Promise<ResearchRun> =>
      run(this.api.deep_research.cancel({ params: { ...this.pid, rid: asId(runId) }, payload: reason === undefined ? {} : { reason } })),
    /** An artifact's content (final.md, citations.json, confidence.json) by artifact id. */
    artifact: (runId: string, artifactId: string): Promise<string> =>
      run(this.api.deep_research.getArtifact({ params: { ...this.pid, rid: asId(runId), aid: asId(artifactId) } })),
    /** Follows the run until it ends, deciding outline approval with `onOutline`; returns the run. */
    wait: async (runId: string, wait: ResearchWaitOptions = {}): Promise<ResearchRun> => {
      for await (const event of this.research.events(runId, { ...wait.stream, ...(wait.signal ? { signal: wait.signal } : {}) })) {
        await wait.onEvent?.(event)
        if (event.type === "run.input_request" && wait.onOutline !== undefined) {
          const requestId = event.data.request_id ?? event.data.input_request_id
          const current = await this.research.get(runId)
          if (current.pending_request_id !== requestId) continue // answered already (replayed event)
          const response = await wait.onOutline({ requestId, prompt: event.data.prompt, outline: current.outline, run: current })
          if (response !== undefined) await this.research.approve(runId, requestId, response)
        }
      }
      return this.research.get(runId)
    },
    createAndWait: async (body: CreateResearchRequest, wait: ResearchWaitOptions = {}): Promise<ResearchRun> => {
      const created = await this.research.create(body)
      return this.research.wait(created.id, wait)
    }
  }

  /** WebSearch. */
  readonly search = {
    /** Starts a search; with `wait` (default) the answer holds the results when they came within 30 s. */
    create: (body: WebSearchRequest): Promise<SearchRun> =>
      run(Effect.flatMap(decodePayload(WebSearchSchema, body), (payload) => this.api.web_search.createRun({ params: this.pid, payload }))),
    get: (runId: string): Promise<SearchRun> =>
      run(this.api.web_search.getRun({ params: { ...this.pid, rid: asId(runId) } })),
    events: (runId: string, stream: StreamOptions<WebSearchEvent> = {}) =>
      this.events<WebSearchEvent>(`/v1/projects/${this.projectId}/web_search/runs/${runId}/events`, { isLast: runEnded, ...stream }),
    /** Runs the queries and returns the ended run (following its events past the 30 s wait). */
    run: async (body: WebSearchRequest, wait: WaitOptions<WebSearchEvent> = {}): Promise<SearchRun> => {
      const started = await this.search.create(body)
      if (TERMINAL_STATUSES.has(started.status)) return started
      for await (const event of this.search.events(started.id, { ...wait.stream, ...(wait.signal ? { signal: wait.signal } : {}) })) {
        await wait.onEvent?.(event)
      }
      return this.search.get(started.id)
    }
  }

  /** Track monitors. */
  readonly monitors = {
    create: (body: CreateMonitorRequest): Promise<CreatedMonitor> =>
      run(Effect.flatMap(decodePayload(CreateMonitorSchema, body), (payload) => this.api.track.createMonitor({ params: this.pid, payload }))),
    list: (query: { page?: number; page_size?: number; status?: string } = {}) =>
      run(this.api.track.listMonitors({ params: this.pid, query: query as never })),
    get: (monitorId: string): Promise<Monitor> => run(this.api.track.getMonitor({ params: { ...this.pid, mid: asId(monitorId) } })),
    patch: (monitorId: string, body: { action: "pause" | "resume" | "refine" | "cancel"; patch?: Record<string, unknown>; reason?: string }) =>
      run(Effect.flatMap(decodePayload(PatchMonitorSchema, body), (payload) => this.api.track.patchMonitor({ params: { ...this.pid, mid: asId(monitorId) }, payload }))),
    delete: (monitorId: string) => run(this.api.track.deleteMonitor({ params: { ...this.pid, mid: asId(monitorId) } })),
    runNow: (monitorId: string) => run(this.api.track.runNow({ params: { ...this.pid, mid: asId(monitorId) } })),
    snapshots: (monitorId: string, query: { limit?: number; cursor?: string } = {}) =>
      run(this.api.track.listSnapshots({ params: { ...this.pid, mid: asId(monitorId) }, query: query as never })),
    deliveries: (monitorId: string, query: { limit?: number; cursor?: string } = {}) =>
      run(this.api.track.listDeliveries({ params: { ...this.pid, mid: asId(monitorId) }, query: query as never })),
    answer: (monitorId: string, requestId: string, response: string, kind: "answer" | "skip" | "abandon" = "answer") =>
      run(this.api.track.interveneMonitor({ params: { ...this.pid, mid: asId(monitorId) }, payload: { request_id: requestId, kind, response } })),
    events: (monitorId: string, stream: StreamOptions<MonitorEvent> = {}) =>
      this.events<MonitorEvent>(`/v1/projects/${this.projectId}/track/monitors/${monitorId}/events`, { isLast: monitorEnded, ...stream })
  }
}
