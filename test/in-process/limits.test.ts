/**
 * DoAnything limits in-process, with time driven by TestClock (no sleeps): the run's
 * max_duration_minutes, the step budget and continue, the session's idle timeout and keep_alive
 * false, and a service without a model.
 *
 * The stack is built under the TestClock of the tests (`layer` without `excludeTestServices`):
 * the Session entity runs with the clock of Sharding (EntityManager takes Sharding's Clock), so
 * the run's duration timeout and the entity's idle passivation (EntityReaper) follow
 * `TestClock.adjust`. The database, Chromium and the scripted model server are real I/O and do
 * not wait on the clock.
 */
import { assert, expect, layer } from "@effect/vitest"
import { type Duration, Effect } from "effect"
import type { SessionId } from "../../src/domain/run.ts"
import { TestClock } from "effect/testing"
import { BrowserPool } from "../../src/browser/pool.ts"
import { Sessions } from "../../src/do-anything/service.ts"
import { SkillStore } from "../../src/store/skills.ts"
import { Fixtures, inProcess, Tenant } from "./harness.ts"
import { createSession, doAnything } from "./do-anything.ts"
import { awaitState, awaitStatus, gate, TERMINAL } from "./waits.ts"

const IDLE_SECONDS = 30

/** The session once it is `closed`, within `times` steps of virtual time (see awaitState). */
const awaitClosed = (sessionId: SessionId, step: Duration.Input, times: number) =>
  Effect.gen(function*() {
    const tenant = yield* Tenant
    const sessions = yield* Sessions
    const closed = sessions.find(tenant.projectId, sessionId).pipe(
      Effect.orDie,
      Effect.map(({ session }) => session.status === "closed" ? session : undefined)
    )
    return yield* awaitState(`session ${sessionId} closed`, closed, { step, virtualSteps: times })
  })

layer(inProcess({ WA_MAX_STEPS: "3", WA_SESSION_IDLE_SECONDS: String(IDLE_SECONDS) }))("limits under TestClock", (it) => {
  it.effect("a run past max_duration_minutes ends canceled with duration_exceeded; keep_alive false releases the browser at once", () =>
    Effect.gen(function*() {
      const { model } = yield* Fixtures
      const hold = gate()
      model.setScript(async () => {
        await hold.pass() // the model never answers within the run's minute
        return { tool: "scroll", args: { direction: "down" } }
      })
      const { session, run } = yield* createSession({ instructions: "never ends", max_duration_minutes: 1 })
      yield* hold.reached
      // The run's deadline is set from the real clock when it is created and its timer started on
      // the TestClock when the agent starts, so the real time in between (more under load) comes off
      // the minute: check "still running" well before the end, then go past it.
      yield* TestClock.adjust("30 seconds")
      expect((yield* awaitStatus(run.id, ["running"])).status).toBe("running")
      yield* TestClock.adjust("31 seconds")
      const ended = yield* awaitStatus(run.id, TERMINAL)
      expect(ended).toMatchObject({ status: "canceled", terminal_reason: "duration_exceeded", error_code: "duration_exceeded" })
      yield* hold.open
      // keep_alive false: closed well before the idle timeout could have done it.
      yield* awaitClosed(session.id, "1 second", IDLE_SECONDS / 2)
    }))

  it.effect("a kept-alive session keeps its browser after the run and releases it after the idle timeout", () =>
    Effect.gen(function*() {
      const { model } = yield* Fixtures
      const tenant = yield* Tenant
      const sessions = yield* Sessions
      const pool = yield* BrowserPool
      model.setScript(() => ({ tool: "done", args: { output: 1 } }))
      const { session, run } = yield* createSession({ instructions: "stay", keep_alive: true })
      expect((yield* awaitStatus(run.id, TERMINAL)).status).toBe("done")
      const idle = yield* awaitState(
        "the session idle",
        sessions.find(tenant.projectId, session.id).pipe(Effect.orDie, Effect.map(({ session }) => session.status === "idle" ? session : undefined)),
        { step: 0, virtualSteps: 0 }
      )
      expect(idle.status).toBe("idle")
      // The earlier sessions of this file are closed, their browsers released: this one is the only lease.
      const open = (yield* pool.stats).contextsOpen
      expect(open).toBe(1)

      // Short of the idle timeout the session and its browser stay.
      yield* TestClock.adjust(`${IDLE_SECONDS - 5} seconds`)
      expect((yield* sessions.find(tenant.projectId, session.id)).session.status).toBe("idle")
      expect((yield* pool.stats).contextsOpen).toBe(open)

      // Past it (plus the entity reaper's period), the entity passivates: browser released, session closed.
      yield* awaitClosed(session.id, "1 second", 2 * IDLE_SECONDS)
      expect((yield* pool.stats).contextsOpen).toBe(open - 1)
      const refused = yield* Effect.flip(sessions.addRun(tenant.projectId, session.id, doAnything({ instructions: "too late" })))
      expect(refused._tag).toBe("SessionClosed")
    }))

  it.effect("a run that uses its step budget is marked expired, and continue starts a follow-up with a fresh budget", () =>
    Effect.gen(function*() {
      const { site, model } = yield* Fixtures
      const sessions = yield* Sessions
      model.setScript(() => ({ tool: "navigate", args: { url: `${site.url}/page/1` } }))
      // A run may list only skills its project has (422 unknown_skills otherwise).
      const tenant = yield* Tenant
      yield* SkillStore.use((skills) =>
        skills.create(tenant.projectId, "careful", {
          description: "check each page before acting",
          parameters: { type: "object", properties: {} },
          kind: "instructions",
          instructions: "Read the page before each action.",
          steps: null,
          sourceRunId: null
        }, 200)
      ).pipe(Effect.provide(SkillStore.layer), Effect.orDie)
      const { run } = yield* createSession({ instructions: "loop", allowed_actions: ["navigate"], skills: ["careful"], keep_alive: true })
      const expired = yield* awaitStatus(run.id, TERMINAL)
      expect(expired).toMatchObject({ status: "failed", expired: true, error_code: "max_steps_exceeded", step_count: 3 })

      model.setScript(() => ({ tool: "done", args: { output: "finished after continue" } }))
      const continued = yield* sessions.continueRun(expired, "keep going")
      expect(continued.parent_run_id).toBe(run.id)
      assert.strictEqual(continued.request._tag, "DoAnything")
      expect(continued.request).toMatchObject({ allowed_actions: ["navigate"], skills: ["careful"] })
      const next = yield* awaitStatus(continued.id, TERMINAL)
      expect(next).toMatchObject({ status: "done", output: "finished after continue" })
      expect((yield* Effect.flip(sessions.continueRun(next, "more")))._tag).toBe("RunNotExpired")
    }))
})

layer(inProcess({ WA_MODEL_BASE_URL: undefined, WA_MODEL: undefined }))("without a model", (it) => {
  it.effect("the service runs and a run fails at once with model_not_configured", () =>
    Effect.gen(function*() {
      const { run } = yield* createSession({ instructions: "anything" })
      const failed = yield* awaitStatus(run.id, TERMINAL)
      expect(failed).toMatchObject({ status: "failed", error_code: "model_not_configured" })
    }))
})
