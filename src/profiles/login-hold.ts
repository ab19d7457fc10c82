/**
 * The login run of an interactive login (src/do-anything/profiles.ts) when the request gave no
 * `instructions`: it needs no model. It opens the start URL in the session's browser and holds
 * the page for a person, who signs in through the take-control URL the login returned (their
 * control page pauses the run; releasing it makes it `running` again, still holding). The run
 * stays `running` (or `paused`) until confirm closes the login session (which cancels it), the
 * session is closed, or its deadline passes.
 *
 * A login run is recognised by the Session entity (src/do-anything/executor.ts): the session is the
 * login session of a `profile_logins` row and the run's instructions are `loginInstructions` of
 * that row. With caller-given instructions the login run is an ordinary agent run instead.
 */
import { Effect, Queue } from "effect"
import { navigate } from "../browser/actions.ts"
import type { ContextLease } from "../browser/pool.ts"
import { isTerminal } from "../domain/run-state.ts"
import type { Run, RunId } from "../domain/run.ts"
import type { ExecutionToken } from "../domain/id-schemas.ts"
import { RunEventBus } from "../events/run-event-bus.ts"
import { RunStore } from "../store/runs.ts"

/** The instructions stored on a login run that holds the page for a person (what the run view shows). */
export const loginInstructions = (startUrl: string, siteId: string) =>
  `Open ${startUrl} (site ${siteId}) and hold the page for a person, who signs in through the control URL; ` +
  "the run ends when the login is confirmed or its session is closed."

/** Whether `run` is the hold-the-page run of the interactive login `login`. */
export const isLoginHold = (run: Run, login: { readonly start_url: string; readonly site_id: string } | undefined) =>
  login !== undefined && run.instructions === loginInstructions(login.start_url, login.site_id)

/**
 * Runs the login run once it started (the run kernel's `begin`, src/runs/kernel.ts, made it
 * running or announced its resume): opens `startUrl` and waits for the run to end. No steps, no
 * model, no checkpoints; its deadline is the kernel's.
 */
export const holdForPerson = Effect.fn("holdForPerson")(function*(
  runId: RunId,
  lease: ContextLease,
  executor: ExecutionToken,
  startUrl: string
) {
  const store = yield* RunStore
  const bus = yield* RunEventBus
  // Wakeups from the start: a cancel written while the page loads is not missed.
  const wakeups = yield* bus.wakeups(runId)
  const opened = yield* Effect.result(navigate(lease, startUrl))
  yield* store.appendEvent(runId, "run.message", {
    role: "agent",
    content: opened._tag === "Success"
      ? `Opened ${startUrl}; waiting for a person to sign in through the control URL.`
      : `Could not open ${startUrl} (${String((opened.failure as { message?: string }).message ?? opened.failure)}); a person can navigate through the control URL.`
  }, executor)
  while (true) {
    const current = yield* store.getRun(runId)
    if (current === undefined || isTerminal(current.status)) return
    yield* Queue.take(wakeups).pipe(Effect.timeoutOption("2 seconds"))
  }
}, Effect.scoped)
