/**
 * Take control (spec, "Take control"): a person steps into a running DoAnything run through a
 * signed control URL and drives its browser from the control page (src/http/server/control.ts).
 *
 * Every URL is a row of `control_grants`:
 *   pending  → the URL was issued (intervene take_control / refresh_control_url) and
 *              `run.take_control_pending` emitted; the agent keeps going
 *   active   → a person's control page connected: the run is `paused` (`run.user_paused`); the
 *              agent finishes its current step and waits
 * A run `awaiting_input` takes control too (the common case: the agent asked about a captcha or
 * a 2FA prompt, and the person would rather solve it in the page than type an answer): when the
 * page connects, the open input request is withdrawn (`run.input_request_withdrawn`, reason
 * `take_control`) in the same transaction as the pause, and on release the agent's ask_human
 * returns saying a person handled it, so the agent looks at the page afresh.
 *   released → release_control, the page's release button, or the page idle for
 *              WA_CONTROL_IDLE_SECONDS: the run is `running` again (`run.user_released`)
 *   expired  → nobody connected within WA_CONTROL_CONNECT_SECONDS (`run.take_control_expired`)
 *   superseded / ended → a newer URL replaced it, or the run ended
 * Only a pending or active grant's URL works. Each state change and its events are written in
 * one transaction with the run's status, so every API node and runner agrees on them.
 *
 * One controller at a time: each connect of a control page stamps the grant's `connected_at`
 * (microseconds, the page's `controller` token) and wakes the run's listeners; a relay whose token
 * is no longer the grant's has been taken over by a newer page and ends, telling its page why.
 * The newest page wins (not the first): a person who reloads, or moves to another device, keeps
 * control instead of being locked out by a socket their old tab left half-open.
 *
 * The URL is `/v1/control/<grant id>?exp=<exp>&sig=<HMAC-SHA256(url_signing secret, control:<grant>:<run>:<exp>)>`
 * (like the signed media URLs: the secret part stays out of the path, which the request log
 * records): unforgeable, bound to one run, and it expires (exp is the connect deadline).
 */
import { Context, Effect, Layer } from "effect"
import { AppConfig } from "../config/config.ts"
import { ControlNotAvailable } from "../domain/errors.ts"
import { makeId } from "../domain/ids.ts"
import { isTerminal, type RunStatus } from "../domain/run-state.ts"
import type { Run, RunId } from "../domain/run.ts"
import type { ControlGrantId } from "../domain/id-schemas.ts"
import { RunStore } from "../store/runs.ts"
import { loadUrlSigner } from "../store/url-signer.ts"
import { type Grant, GrantStore, type GrantStatus } from "./grant-store.ts"
import { withMethodSpans } from "../observability/spans.ts"

export type { Grant, GrantStatus }

export interface IssuedUrl {
  readonly standalone_control_url: string
  /** Unix seconds: nobody connecting before then expires the URL. */
  readonly exp: number
}

/** What a control URL's token is worth right now. */
export type TokenCheck =
  | { readonly _tag: "Valid"; readonly grant: Grant }
  | { readonly _tag: "Invalid" }
  | { readonly _tag: "Expired" }

export type ConnectOutcome =
  | { readonly _tag: "connected"; readonly controller: string }
  | { readonly _tag: "expired" | "ended" | "unavailable" }

/** The path and query of a control page (the WebSocket is the same path plus `/ws`, same query). */
export const controlPath = (grantId: ControlGrantId, exp: number, signature: string) => `/v1/control/${grantId}?exp=${exp}&sig=${signature}`

/** The signed parts of a control URL as received (any of them may be missing or forged). */
export interface ControlCredentials {
  readonly grantId: ControlGrantId
  readonly exp: string | undefined
  readonly sig: string | undefined
}

export class TakeControl extends Context.Service<TakeControl, {
  /** intervene take_control: a new control URL (any earlier pending one stops working). */
  readonly issue: (run: Run, reason: string | null, baseUrl: string) => Effect.Effect<IssuedUrl, ControlNotAvailable>
  /** intervene refresh_control_url: a new URL for the run's latest take_control, after expiry or instead of a pending one. */
  readonly refresh: (run: Run, baseUrl: string) => Effect.Effect<IssuedUrl, ControlNotAvailable>
  /** intervene release_control, the page's release button, or idle: paused → running. */
  readonly release: (runId: RunId, trigger: string) => Effect.Effect<Run, ControlNotAvailable>
  /** Checks a URL's signature and its grant's state (a pending grant past its deadline expires here). */
  readonly verify: (credentials: ControlCredentials) => Effect.Effect<TokenCheck>
  /**
   * A control page connected: a pending grant becomes active and the run paused; on an active
   * grant the page takes over from the one connected before (which is woken to notice).
   */
  readonly connect: (grantId: ControlGrantId) => Effect.Effect<ConnectOutcome>
  /** Expires the run's pending grants whose deadline passed (emits run.take_control_expired). */
  readonly expireDue: (runId: RunId) => Effect.Effect<void>
  readonly grant: (grantId: ControlGrantId) => Effect.Effect<Grant | undefined>
  /** The run's pending and active grants. */
  readonly openGrants: (runId: RunId) => Effect.Effect<ReadonlyArray<Grant>>
}>()("wa/control/TakeControl") {
  static readonly layer = Layer.effect(
    TakeControl,
    Effect.gen(function*() {
      const grants = yield* GrantStore
      const store = yield* RunStore
      const config = yield* AppConfig
      const signer = yield* loadUrlSigner
      const message = (grantId: ControlGrantId, runId: RunId, exp: number) => `control:${grantId}:${runId}:${exp}`
      const sign = (grantId: ControlGrantId, runId: RunId, exp: number) => signer.sign(message(grantId, runId, exp))

      const lockRun = grants.lockRun
      const grantById = grants.grant
      const setStatus = grants.setStatus
      const expire = (grant: Grant) =>
        Effect.gen(function*() {
          yield* setStatus(grant.id, "expired")
          yield* store.appendEvent(grant.runId, "run.take_control_expired", {
            run_id: grant.runId,
            exp: Math.floor(grant.expiresAt.getTime() / 1000)
          })
        })
      const unavailable = (runId: RunId, status: RunStatus | undefined, detail: string) =>
        new ControlNotAvailable({ runId, status: status ?? "failed", detail })
      const tx = grants.transaction

      /** A new grant for a running run (the caller holds the run's lock). */
      const insertGrant = (run: Run, reason: string | null, baseUrl: string) =>
        Effect.gen(function*() {
          yield* grants.supersedePending(run.id)
          const id = makeId("ctl")
          const exp = Math.floor(Date.now() / 1000) + config.controlConnectSeconds
          yield* grants.insert({ id, runId: run.id, sessionId: run.session_id, reason, expiresAt: new Date(exp * 1000) })
          const url = `${baseUrl.replace(/\/$/, "")}${controlPath(id, exp, sign(id, run.id, exp))}`
          yield* store.appendEvent(run.id, "run.take_control_pending", { run_id: run.id, standalone_control_url: url, exp, reason })
          return { standalone_control_url: url, exp }
        })

      const needsRunning = (run: Run, status: RunStatus | undefined, kind: string) =>
        status === "paused"
          ? unavailable(run.id, status, `a person already holds control of this run; send release_control first`)
          : unavailable(run.id, status, `the run is ${status ?? "gone"}; ${kind} needs a running run (or one awaiting input)`)
      /** The states a person can take control from: the agent at work, or waiting for an answer. */
      const controllable = (status: RunStatus | undefined) => status === "running" || status === "awaiting_input"

      const expireDue = (runId: RunId) =>
        tx(Effect.gen(function*() {
          const status = yield* lockRun(runId)
          const due = yield* grants.due(runId)
          for (const grant of due) {
            if (status === undefined || isTerminal(status)) yield* setStatus(grant.id, "ended")
            else yield* expire(grant)
          }
        }))

      return TakeControl.of(withMethodSpans("TakeControl", {
        issue: (run, reason, baseUrl) =>
          tx(Effect.gen(function*() {
            const status = yield* lockRun(run.id)
            if (!controllable(status) || run.session_id === null) return yield* needsRunning(run, status, "take_control")
            return yield* insertGrant(run, reason, baseUrl)
          })),
        refresh: (run, baseUrl) =>
          tx(Effect.gen(function*() {
            const status = yield* lockRun(run.id)
            const latest = yield* grants.latest(run.id)
            if (latest === undefined) return yield* unavailable(run.id, status, "no take_control was requested on this run; send kind take_control first")
            if (!controllable(status) || run.session_id === null) return yield* needsRunning(run, status, "refresh_control_url")
            return yield* insertGrant(run, latest.reason, baseUrl)
          })),
        release: (runId, trigger) =>
          tx(Effect.gen(function*() {
            const status = yield* lockRun(runId)
            if (status !== "paused") {
              return yield* unavailable(runId, status, `the run is ${status ?? "gone"}; release_control needs a paused run (a person holding control)`)
            }
            yield* grants.releaseActive(runId)
            const run = yield* store.transition(runId, "running", { data: { trigger } }).pipe(Effect.orDie)
            yield* store.appendEvent(runId, "run.user_released", { run_id: runId, trigger })
            return run
          })),
        verify: ({ grantId, exp: expText, sig: signature }) =>
          Effect.gen(function*() {
            if (!/^ctl_[0-9a-z]{26}$/.test(grantId) || !/^\d{1,12}$/.test(expText ?? "") || !/^[A-Za-z0-9_-]{43}$/.test(signature ?? "")) {
              return { _tag: "Invalid" } as const
            }
            const exp = Number(expText)
            const grant = yield* grantById(grantId)
            if (grant === undefined) return { _tag: "Invalid" } as const
            if (!signer.matches(message(grant.id, grant.runId, exp), signature!)) return { _tag: "Invalid" } as const
            // The token's exp is the grant's own: a re-signed exp would not match the signature.
            if (exp !== Math.floor(grant.expiresAt.getTime() / 1000)) return { _tag: "Invalid" } as const
            if (grant.status === "pending" && grant.expiresAt.getTime() <= Date.now()) {
              yield* expireDue(grant.runId)
              return { _tag: "Expired" } as const
            }
            if (grant.status !== "pending" && grant.status !== "active") return { _tag: "Expired" } as const
            const runStatus = yield* grants.runStatus(grant.runId)
            if (runStatus === undefined || isTerminal(runStatus)) {
              yield* grants.endIfOpen(grant.id)
              return { _tag: "Expired" } as const
            }
            return { _tag: "Valid", grant } as const
          }),
        connect: (grantId) =>
          tx(Effect.gen(function*() {
            const found = yield* grantById(grantId)
            if (found === undefined) return { _tag: "ended" } as const
            const status = yield* lockRun(found.runId)
            const grant = (yield* grantById(grantId, true))!
            if (status === undefined || isTerminal(status)) {
              if (grant.status === "pending" || grant.status === "active") yield* setStatus(grant.id, "ended")
              return { _tag: "ended" } as const
            }
            /** This page becomes the grant's one controller. */
            const stamp = grants.stamp(grant.id).pipe(Effect.map((controller) => ({ _tag: "connected", controller }) as const))
            if (grant.status === "active") {
              // Taking over: the page connected before is woken (on whichever node holds it) and
              // sees the token is no longer its own. Delivered at commit, like event notifications.
              yield* grants.wakeRun(grant.runId)
              return yield* stamp
            }
            if (grant.status !== "pending") return { _tag: grant.status === "expired" ? "expired" : "ended" } as const
            if (grant.expiresAt.getTime() <= Date.now()) {
              yield* expire(grant)
              return { _tag: "expired" } as const
            }
            if (!controllable(status)) return { _tag: "unavailable" } as const
            yield* setStatus(grant.id, "active")
            if (status === "awaiting_input") {
              // The person answers by acting in the page: the question is withdrawn, not answered.
              const withdrawn = yield* grants.withdrawInputRequests(grant.runId)
              for (const requestId of withdrawn) {
                yield* store.appendEvent(grant.runId, "run.input_request_withdrawn", {
                  input_request_id: requestId,
                  request_id: requestId,
                  reason: "take_control"
                })
              }
            }
            yield* store.transition(grant.runId, "paused", { data: { trigger: "control_page" } }).pipe(Effect.orDie)
            yield* store.appendEvent(grant.runId, "run.user_paused", { run_id: grant.runId, reason: grant.reason })
            return yield* stamp
          })),
        expireDue,
        grant: (grantId) => grantById(grantId),
        openGrants: grants.open
      }))
    })
  ).pipe(Layer.provide(GrantStore.layer))
}
