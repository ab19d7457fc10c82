/**
 * Take control over HTTP: the control page (ControlApi) and its WebSocket.
 *
 * The WebSocket lands on whichever API node the person reached. That node checks the token,
 * marks the grant connected (the run becomes paused), and relays between the socket and the
 * Session entity that holds the browser, wherever the cluster placed it: frames come from the
 * entity's `ControlFrames` stream RPC, input goes out as `ControlInput` RPCs (batched, in order).
 * No runner address or port is needed: the cluster's own routing (runner storage, shard
 * assignments) reaches the runner, in all-in-one mode and across nodes alike.
 *
 * The socket ends (with a final {type:"ended", reason} message) when control is released (API,
 * release button, idle), the run ends, the live view stops, or the person closes the page.
 * Closing the page does not release control by itself: the idle timeout does, unless the person
 * reconnects with the same URL first.
 *
 * One controller at a time: a page that connects to a grant another page holds takes over (the
 * newest wins, see src/control/take-control.ts); the earlier page gets {type:"ended"} saying so
 * and its socket closes. The upgrade is refused (403 origin_not_allowed, before the run is
 * paused) when the request carries an Origin that is not the service's own (WA_PUBLIC_URL, else
 * the scheme and host the request reached): another site's page cannot open the socket even with
 * the URL. A request without Origin is not a browser's (browsers always send it on WebSockets)
 * and is let through: the signed URL is its credential, as for any other client.
 */
import { Cause, Deferred, Effect, Exit, Queue, Schema, Stream } from "effect"
import { HttpRouter, HttpServerRequest, HttpServerResponse } from "effect/http"
import { HttpApiBuilder } from "effect/http-api"
import { CloseEvent, type Socket } from "effect/socket/Socket"
import { AppConfig } from "../../config/config.ts"
import { type Grant, TakeControl, type TokenCheck } from "../../control/take-control.ts"
import { ControlRelay, LiveInput } from "../../do-anything/control-relay.ts"
import { WebAgentApi } from "../api/api.ts"
import { envelopeBody, Forbidden, jsonResponse } from "../errors.ts"
import { controlPageHtml, controlPagePolicy } from "../views/control-page.ts"
import { publicBaseUrl } from "./do-anything.ts"
import { cspNonce, pageSecurityHeaders } from "../page-security.ts"
import { ControlGrantId } from "../../domain/id-schemas.ts"

const refused = (check: Exclude<TokenCheck, { _tag: "Valid" }>) =>
  check._tag === "Invalid"
    ? { code: "control_url_invalid", detail: "this control URL is not valid (its signature does not match)" }
    : { code: "control_url_expired", detail: "this control URL has expired or its control has ended; ask for a new one (intervene refresh_control_url)" }

export const ControlHandlers = HttpApiBuilder.group(
  WebAgentApi,
  "control",
  Effect.fn(function*(handlers) {
    const take = yield* TakeControl
    return handlers.handle("controlPage", ({ params, query }) =>
      Effect.gen(function*() {
        const check = yield* take.verify({ grantId: params.grant, exp: query.exp, sig: query.sig })
        if (check._tag !== "Valid") return yield* new Forbidden({ ...refused(check), extra: {} })
        const nonce = cspNonce()
        return HttpServerResponse.text(controlPageHtml({ runId: check.grant.runId, reason: check.grant.reason, nonce }), {
          contentType: "text/html; charset=utf-8",
          headers: { ...pageSecurityHeaders(controlPagePolicy(nonce)), "cache-control": "no-store" }
        })
      }))
  })
)

const ClientMessage = Schema.Union([
  Schema.Struct({ type: Schema.Literal("input"), input: LiveInput }),
  Schema.Struct({ type: Schema.Literal("release") })
])
const decodeClientMessage = Schema.decodeUnknownOption(Schema.fromJsonString(ClientMessage))

/** Inputs sent to the runner in one RPC at most (mouse moves of a fast hand pile up). */
const MAX_BATCH = 64

/** The WebSocket of the control page: GET /v1/control/{grant}/ws?exp=...&sig=... */
export const ControlSocketRoute = HttpRouter.use((router) =>
  Effect.gen(function*() {
    const take = yield* TakeControl
    const relayTo = yield* ControlRelay
    const config = yield* AppConfig

    /** Relays between the person's socket and the session entity until control ends (or another page takes it). */
    const relay = (socket: Socket, grant: Grant, controller: string) =>
      Effect.scoped(Effect.gen(function*() {
        // Acquiring the reader completes the handshake (the 101); writes wait for it.
        const reader = yield* socket.reader
        const write = yield* socket.writer
        const send = (message: Record<string, unknown>) => write.write(JSON.stringify(message))
        const session = relayTo.session(grant)
        const ended = yield* Deferred.make<string>()
        const end = (reason: string) => Deferred.succeed(ended, reason).pipe(Effect.asVoid)

        yield* send({ type: "hello", run_id: grant.runId, reason: grant.reason, idle_seconds: config.controlIdleSeconds })

        // Frames: the viewport size first whenever it changes, then the JPEG as a binary message.
        let viewport = ""
        yield* session.frames.pipe(
          Stream.runForEach((frame) =>
            Effect.gen(function*() {
              const size = `${frame.width}x${frame.height}`
              if (size !== viewport) {
                viewport = size
                yield* send({ type: "viewport", width: frame.width, height: frame.height })
              }
              yield* write.write(Buffer.from(frame.data, "base64"))
            })
          ),
          Effect.exit,
          Effect.flatMap((exit) =>
            end(Exit.isSuccess(exit) ? "the live view stopped" : liveViewReason(exit.cause) ?? "the live view stopped")
          ),
          Effect.forkScoped
        )

        // Input: in arrival order, batched while an RPC is under way.
        const inputs = yield* Queue.unbounded<LiveInput>()
        let offered = 0
        let delivered = 0
        yield* Effect.gen(function*() {
          while (true) {
            const batch = yield* Queue.takeBetween(inputs, 1, MAX_BATCH)
            yield* session.input(batch)
            delivered += batch.length
          }
        }).pipe(
          Effect.catchCause((cause) => end(liveViewReason(cause) ?? "the input could not be delivered")),
          Effect.forkScoped
        )

        // Control state: every event of the run wakes this up (released, run ended, ...).
        yield* relayTo.controlEnded(grant, controller).pipe(Effect.flatMap(end), Effect.forkScoped)

        // The person's messages.
        yield* Effect.gen(function*() {
          const decoder = new TextDecoder()
          while (true) {
            const chunks = yield* reader.pull
            for (const chunk of chunks) {
              const message = decodeClientMessage(typeof chunk === "string" ? chunk : decoder.decode(chunk))
              if (message._tag === "None") continue
              if (message.value.type === "release") {
                // What the person did before pressing release reaches the page before the agent
                // gets it back (bounded, in case the runner stopped answering).
                yield* Effect.sleep("5 millis").pipe(
                  Effect.repeat({ until: () => delivered >= offered }),
                  Effect.timeoutOption("3 seconds")
                )
                yield* take.release(grant.runId, "control_page").pipe(Effect.ignore)
              } else {
                offered += 1
                yield* Queue.offer(inputs, message.value.input)
              }
            }
          }
        }).pipe(
          Effect.catchCause(() => end("the control page closed")),
          Effect.forkScoped
        )

        const reason = yield* Deferred.await(ended)
        yield* send({ type: "ended", reason }).pipe(Effect.ignore)
        yield* write.write(new CloseEvent(1000, reason.slice(0, 120))).pipe(Effect.ignore)
      }))

    yield* router.add("GET", "/v1/control/:grant/ws", Effect.gen(function*() {
      const request = yield* HttpServerRequest.HttpServerRequest
      if ((request.headers["upgrade"] ?? "").toLowerCase() !== "websocket") {
        return jsonResponse(400, envelopeBody("bad_request", "this endpoint is the control page's WebSocket; open the control page instead"))
      }
      const origin = request.headers["origin"]
      if (origin !== undefined && !sameOrigin(origin, yield* publicBaseUrl)) {
        return jsonResponse(403, envelopeBody("origin_not_allowed", "the control socket opens only from this service's own control page"))
      }
      const { grant } = yield* HttpRouter.params
      const query = new URL(request.url, "http://control").searchParams
      // The socket's route is not an HttpApi endpoint: its grant id is branded here (verify checks it).
      const check = yield* take.verify({ grantId: ControlGrantId.make(grant ?? ""), exp: query.get("exp") ?? undefined, sig: query.get("sig") ?? undefined })
      if (check._tag !== "Valid") return jsonResponse(403, envelopeBody(refused(check).code, refused(check).detail))
      const outcome = yield* take.connect(check.grant.id)
      if (outcome._tag === "unavailable") {
        return jsonResponse(409, envelopeBody("conflict", "the run is not running (it may be awaiting input); try again when it runs"))
      }
      if (outcome._tag !== "connected") return jsonResponse(403, envelopeBody(refused({ _tag: "Expired" }).code, refused({ _tag: "Expired" }).detail))
      const socket = yield* request.upgrade
      yield* relay(socket, check.grant, outcome.controller).pipe(
        Effect.catchCause((cause) => Effect.logWarning("control page socket failed", cause))
      )
      return HttpServerResponse.empty()
    }))
  })
)

/** Whether an Origin header names the same origin (scheme, host, port) as the service's base URL. */
const sameOrigin = (origin: string, base: string): boolean => {
  if (!URL.canParse(origin) || !URL.canParse(base)) return false
  return new URL(origin).origin === new URL(base).origin
}

/** The reason a LiveViewUnavailable carries, when that is what ended the relay. */
const liveViewReason = (cause: Cause.Cause<unknown>): string | undefined => {
  const failure = cause.reasons.find((reason) => reason._tag === "Fail")
  const error = failure?._tag === "Fail" ? failure.error as { _tag?: string; reason?: string } : undefined
  return error?._tag === "LiveViewUnavailable" ? error.reason : undefined
}

