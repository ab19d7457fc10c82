/**
 * The runner's side of take control, inside the Session entity that holds the browser (see
 * src/do-anything/executor.ts): the live frames and the person's input for a control page (whichever
 * API node holds its WebSocket reaches this entity through the cluster), and the watcher that runs
 * beside each run's agent: it expires control URLs nobody opened in time and gives the browser
 * back to the agent when the control page has been idle for WA_CONTROL_IDLE_SECONDS.
 *
 * The idle clock lives here, in the memory of the runner that receives the person's input, because
 * the run, its browser and its watcher live on that same runner by construction.
 */
import { Effect, Queue, Schema, Stream } from "effect"
import type { CDPSession, Page } from "playwright-core"
import { dispatchInput, type LiveFrame, type LiveInput, screencast } from "../browser/live-view.ts"
import { AppConfig } from "../config/config.ts"
import type { RunId, SessionId } from "../domain/run.ts"
import type { ControlGrantId } from "../domain/id-schemas.ts"
import { RunEventBus } from "../events/run-event-bus.ts"
import { TakeControl } from "./take-control.ts"

/** The live view cannot be served: the URL's grant is not active here, or there is no browser. */
export class LiveViewUnavailable extends Schema.TaggedError<LiveViewUnavailable>()("LiveViewUnavailable", {
  reason: Schema.String
}) {}

/** How long a grant found active is trusted for input before it is read again. */
const GRANT_CHECK_MS = 1000

export const makeLiveControl = (sessionId: SessionId, currentPage: () => Page | undefined) =>
  Effect.gen(function*() {
    const take = yield* TakeControl
    const bus = yield* RunEventBus
    const config = yield* AppConfig
    const idleMs = config.controlIdleSeconds * 1000
    /** When each grant's page last sent input (or connected). */
    const lastInput = new Map<string, number>()
    const checked = new Map<string, number>()
    const inputSessions = new WeakMap<Page, Promise<CDPSession>>()

    const activeGrant = (grantId: ControlGrantId) =>
      Effect.gen(function*() {
        const now = Date.now()
        if ((checked.get(grantId) ?? 0) > now - GRANT_CHECK_MS) return
        const grant = yield* take.grant(grantId)
        if (grant === undefined || grant.sessionId !== sessionId || grant.status !== "active") {
          checked.delete(grantId)
          return yield* new LiveViewUnavailable({ reason: "this control URL no longer holds control of the run" })
        }
        checked.set(grantId, now)
      })

    const page = Effect.suspend(() => {
      const current = currentPage()
      return current === undefined || current.isClosed()
        ? Effect.fail(new LiveViewUnavailable({ reason: "the session has no open browser page" }))
        : Effect.succeed(current)
    })

    const inputSession = (target: Page) => {
      let session = inputSessions.get(target)
      if (session === undefined) {
        session = target.context().newCDPSession(target)
        inputSessions.set(target, session)
        session.catch(() => inputSessions.delete(target))
      }
      return session
    }

    const frames = (grantId: ControlGrantId): Stream.Stream<LiveFrame, LiveViewUnavailable> =>
      Stream.unwrap(Effect.gen(function*() {
        checked.delete(grantId)
        yield* activeGrant(grantId)
        const target = yield* page
        lastInput.set(grantId, Date.now())
        return screencast(target, { quality: 70, maxWidth: 1600, maxHeight: 1200 }).pipe(
          Stream.catchCause((cause) =>
            Stream.fromEffect(Effect.andThen(
              Effect.logWarning("the page's screencast stopped", cause),
              Effect.fail(new LiveViewUnavailable({ reason: "the page's screencast stopped" }))
            ))
          )
        )
      }))

    const input = (grantId: ControlGrantId, inputs: ReadonlyArray<LiveInput>) =>
      Effect.gen(function*() {
        yield* activeGrant(grantId)
        const target = yield* page
        lastInput.set(grantId, Date.now())
        yield* Effect.tryPromise({
          try: async () => {
            const cdp = await inputSession(target)
            for (const event of inputs) await dispatchInput(cdp, event)
          },
          catch: (error) => new LiveViewUnavailable({ reason: `the input could not be delivered: ${error instanceof Error ? error.message : String(error)}` })
        })
      })

    /**
     * Runs beside a run's agent (and stops with it): expires the run's control URLs at their
     * deadline and releases a control page that sent nothing for WA_CONTROL_IDLE_SECONDS. With no
     * URL open it only wakes on the run's events (a new URL is one).
     */
    const watch = (runId: RunId) =>
      Effect.scoped(Effect.gen(function*() {
        const wakeups = yield* bus.wakeups(runId)
        while (true) {
          const open = yield* take.openGrants(runId)
          const now = Date.now()
          if (open.some((grant) => grant.status === "pending" && grant.expiresAt.getTime() <= now)) yield* take.expireDue(runId)
          const active = open.find((grant) => grant.status === "active")
          if (active !== undefined) {
            const last = Math.max(lastInput.get(active.id) ?? 0, active.connectedAt?.getTime() ?? 0)
            if (now - last >= idleMs) {
              yield* take.release(runId, "idle").pipe(Effect.ignore)
              lastInput.delete(active.id)
            }
          }
          if (open.length === 0) yield* Queue.take(wakeups).pipe(Effect.timeoutOption("60 seconds"))
          else yield* Queue.take(wakeups).pipe(Effect.timeoutOption(`${Math.min(1000, Math.max(100, idleMs / 4))} millis`))
        }
      })).pipe(Effect.catchCause((cause) => Effect.logWarning("take-control watcher stopped", cause)))

    return { frames, input, watch } as const
  })
