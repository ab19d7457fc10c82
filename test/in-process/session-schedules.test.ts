/**
 * Scheduled DoAnything sessions in-process: the firing handler (SessionSchedules.fire, what the
 * scheduler calls at least once per slot) against the real Sessions service, the Session entity on
 * the TestRunner, the real PostgreSQL and Chromium, and the scripted model.
 *
 * - a slot delivered many times at once makes one run (the firing's key decides it once);
 * - firings of many schedules at once respect the project's scheduled cap (counted under one lock);
 * - the autonomous arithmetic (clamp, fallback) and an event schedule's lack of timed slots.
 */
import { expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import { SessionSchedules } from "../../src/do-anything/schedules.ts"
import { scheduledRunning } from "../../src/schedules/session-firings.ts"
import { clampProposal, nextFireAt } from "../../src/domain/schedule-spec.ts"
import { SessionStore } from "../../src/store/sessions.ts"
import { createSession } from "./do-anything.ts"
import { Fixtures, inProcess, Tenant } from "./harness.ts"
import { awaitStatus, TERMINAL } from "./waits.ts"

const CAP = 3

/** Held runs wait for this until the test lets them go. */
let hold: Promise<void> | undefined

layer(inProcess({ WA_SCHEDULED_CAP: String(CAP), WA_SCHEDULE_MIN_INTERVAL_SECONDS: "1", WA_STEP_SCREENSHOTS: "false" }), { excludeTestServices: true })("scheduled sessions", (it) => {
  const scheduledSession = (instructions: string) =>
    Effect.gen(function*() {
      const { model } = yield* Fixtures
      model.setScript(async () => {
        if (hold !== undefined) await hold
        return { tool: "done", args: { output: "ok" } }
      })
      const { session, run } = yield* createSession({ instructions, keep_alive: true, schedule: { kind: "event" } })
      yield* awaitStatus(run.id, TERMINAL)
      const schedule = yield* SessionSchedules.use((schedules) => schedules.ofSession(session.id))
      return { session, schedule: schedule! }
    })

  it.effect("a slot delivered many times at once makes one run", () =>
    Effect.gen(function*() {
      const { session, schedule } = yield* scheduledSession("Count the widgets")
      const schedules = yield* SessionSchedules
      const slot = new Date(Date.now() - 1_000)
      yield* Effect.forEach(Array.from({ length: 6 }), () => schedules.fire(schedule.id, slot), { concurrency: "unbounded" })
      const tenant = yield* Tenant
      const firings = yield* schedules.firings(tenant.projectId, schedule.id, { limit: 10 })
      expect(firings).toHaveLength(1)
      expect(firings[0]).toMatchObject({ outcome: "run_created", trigger: "schedule", reason: null })
      const runs = yield* SessionStore.use((store) => store.runsOfSession(session.id))
      expect(runs).toHaveLength(2)
      expect(runs[1]!.id).toBe(firings[0]!.run_id)
      expect(runs[1]!.instructions).toBe("Count the widgets")
      yield* awaitStatus(runs[1]!.id, TERMINAL)
      // Delivered again after the run ended: still the one run.
      yield* schedules.fire(schedule.id, slot)
      expect(yield* SessionStore.use((store) => store.runsOfSession(session.id))).toHaveLength(2)
    }))

  it.effect("firings of many schedules at once respect the scheduled cap", () =>
    Effect.gen(function*() {
      const made = yield* Effect.forEach(Array.from({ length: 8 }, (_, i) => i), (i) => scheduledSession(`Check shop ${i}`), { concurrency: 4 })
      let release: () => void = () => {}
      hold = new Promise<void>((resolve) => (release = resolve))
      const schedules = yield* SessionSchedules
      const tenant = yield* Tenant
      const slot = new Date(Date.now() - 500)
      yield* Effect.forEach(made, ({ schedule }) => schedules.fire(schedule.id, slot), { concurrency: "unbounded" })
      const decided = yield* Effect.forEach(made, ({ schedule }) => schedules.firings(tenant.projectId, schedule.id, { limit: 1 }).pipe(Effect.map((f) => f[0]!)))
      const created = decided.filter((f) => f.outcome === "run_created")
      expect(created).toHaveLength(CAP)
      expect(decided.filter((f) => f.outcome === "skipped").map((f) => f.reason)).toEqual(Array(8 - CAP).fill("scheduled_cap_reached"))
      const sql = yield* SqlClient.SqlClient
      expect(yield* scheduledRunning(tenant.projectId).pipe(Effect.provideService(SqlClient.SqlClient, sql))).toBe(CAP)
      hold = undefined
      release()
      for (const firing of created) yield* awaitStatus(firing.run_id!, TERMINAL)
      expect(yield* scheduledRunning(tenant.projectId).pipe(Effect.provideService(SqlClient.SqlClient, sql))).toBe(0)
    }), { timeout: 120_000 })

  it("autonomous: a proposal is clamped to [from + min, from + max]; without one the next firing is max later; events have no timed slot", () => {
    const from = new Date("2030-01-01T00:00:00Z")
    const bounds = { min_interval_seconds: 60, max_interval_seconds: 3600 }
    expect(clampProposal(new Date("2030-01-01T00:00:10Z"), from, bounds).toISOString()).toBe("2030-01-01T00:01:00.000Z")
    expect(clampProposal(new Date("2030-02-01T00:00:00Z"), from, bounds).toISOString()).toBe("2030-01-01T01:00:00.000Z")
    expect(clampProposal(new Date("2030-01-01T00:30:00Z"), from, bounds).toISOString()).toBe("2030-01-01T00:30:00.000Z")
    expect(nextFireAt({ kind: "autonomous", ...bounds }, from)?.toISOString()).toBe("2030-01-01T01:00:00.000Z")
    expect(nextFireAt({ kind: "event", event: null }, from)).toBeNull()
    expect(nextFireAt({ kind: "interval", interval_seconds: 60 }, from, new Date("2029-12-31T23:59:30Z"))?.toISOString()).toBe("2030-01-01T00:00:30.000Z")
  })
})
