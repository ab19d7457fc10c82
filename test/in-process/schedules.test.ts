/**
 * src/schedules: the wire schema and slot arithmetic (pure), and the durable scheduler on a real
 * PostgreSQL (a fresh database of this file on the tier's embedded server).
 *
 * The firing tests drive time with TestClock and passes with `runDue` (instances built with
 * `loop: false`), so which slot fires when is exact: each slot once, catch-up once, pause and
 * resume, two schedulers racing for the same rows, re-dispatch of a firing whose handler failed or
 * whose process died. One test runs the real background loops of two schedulers on the live clock
 * and checks what they fired (slots on the grid, none twice), not when.
 */
import { assert, describe, expect, it, layer } from "@effect/vitest"
import { Deferred, Effect, Fiber, Layer, References, Result, Schema } from "effect"
import { SqlClient } from "effect/sql"
import { TestClock } from "effect/testing"
import { AppConfig } from "../../src/config/config.ts"
import { fieldErrors } from "../../src/http/middleware/request-context.ts"
import { Schedules, type FireHandler } from "../../src/schedules/schedules.ts"
import { canonicalSchedule, nextSlot, ScheduleSpec, scheduleParseOptions, validateSchedule } from "../../src/domain/schedule-spec.ts"
import { databaseLayer } from "../../src/store/database.ts"
import { freshDatabase, freshDataDir } from "./fresh-database.ts"

// ---------------------------------------------------------------------------------------------
// The schema and the slots
// ---------------------------------------------------------------------------------------------

const decode = (input: unknown) => Schema.decodeUnknownResult(ScheduleSpec)(input, scheduleParseOptions)

/** The `{loc, msg}` a 422 would carry for the input (the HTTP layer's own flattening). */
const errorsOf = (input: unknown) => {
  const result = decode(input)
  if (Result.isSuccess(result)) throw new Error(`expected ${JSON.stringify(input)} to be refused`)
  return fieldErrors("Payload", result.failure.issue).map(({ loc, msg }) => ({ loc: loc.join("."), msg }))
}

const at = (iso: string) => new Date(iso)

describe("schedule spec", () => {
  it("accepts the cron expression as expr or as cron and answers both as expr", () => {
    const viaExpr = decode({ kind: "cron", expr: "*/5 * * * *", tz: "Europe/Berlin" })
    const viaCron = decode({ kind: "cron", cron: "*/5 * * * *", tz: "Europe/Berlin" })
    const viaBoth = decode({ kind: "cron", expr: "*/5 * * * *", cron: "*/5 * * * *" })
    assert(Result.isSuccess(viaExpr) && Result.isSuccess(viaCron) && Result.isSuccess(viaBoth))
    expect(canonicalSchedule(viaExpr.success)).toEqual({ kind: "cron", expr: "*/5 * * * *", tz: "Europe/Berlin" })
    expect(canonicalSchedule(viaCron.success)).toEqual({ kind: "cron", expr: "*/5 * * * *", tz: "Europe/Berlin" })
    expect(canonicalSchedule(viaBoth.success)).toEqual({ kind: "cron", expr: "*/5 * * * *", tz: "UTC" })
    const nullZone = decode({ kind: "cron", cron: "0 * * * *", tz: null })
    assert(Result.isSuccess(nullZone))
    expect(canonicalSchedule(nullZone.success)).toEqual({ kind: "cron", expr: "0 * * * *", tz: "UTC" })
    const interval = decode({ kind: "interval", interval_seconds: 300 })
    assert(Result.isSuccess(interval))
    expect(canonicalSchedule(interval.success)).toEqual({ kind: "interval", interval_seconds: 300 })
  })

  it("accepts tz on an interval (issue 27): it anchors nothing, so slots and the stored form are the same without it", () => {
    for (const tz of ["Europe/Berlin", "UTC", null]) {
      const zoned = decode({ kind: "interval", interval_seconds: 300, tz })
      assert(Result.isSuccess(zoned))
      expect(canonicalSchedule(zoned.success)).toEqual({ kind: "interval", interval_seconds: 300 })
      expect(validateSchedule(zoned.success, 60)).toBeUndefined()
      const anchor = at("2025-03-30T00:58:00Z")
      expect(nextSlot(zoned.success, at("2025-03-30T01:00:00Z"), anchor)).toEqual(nextSlot({ kind: "interval", interval_seconds: 300 }, at("2025-03-30T01:00:00Z"), anchor))
    }
    expect(validateSchedule({ kind: "interval", interval_seconds: 300, tz: "Nowhere/Special" } as never, 60)).toMatchObject({ path: ["tz"] })
  })

  it("refuses bad schedules naming the field", () => {
    expect(errorsOf({ kind: "cron", expr: "*/5 * * * *", cron: "0 * * * *" })).toEqual([{ loc: "body.cron", msg: expect.stringContaining("same expression") }])
    expect(errorsOf({ kind: "cron", cron: "every day" })).toEqual([{ loc: "body.cron", msg: expect.stringContaining("invalid cron expression") }])
    expect(errorsOf({ kind: "cron", expr: "61 * * * *" })).toEqual([{ loc: "body.expr", msg: expect.stringContaining("invalid cron expression") }])
    expect(errorsOf({ kind: "cron", expr: "0 0 31 2 *" })).toEqual([{ loc: "body.expr", msg: expect.stringContaining("never fires") }])
    expect(errorsOf({ kind: "cron", expr: "0 * * * *", tz: "Mars/Olympus" })).toEqual([{ loc: "body.tz", msg: expect.stringContaining("unknown time zone") }])
    expect(errorsOf({ kind: "cron", expr: "0 * * * *", tz: "+02:00" })).toEqual([{ loc: "body.tz", msg: expect.stringContaining("IANA") }])
    expect(errorsOf({ kind: "cron" })).toEqual([{ loc: "body.expr", msg: expect.stringContaining("needs expr") }])
    // An interval takes tz (the spec's shape lists it) but it must still name a zone.
    expect(errorsOf({ kind: "interval", interval_seconds: 60, tz: "Mars/Olympus" })).toEqual([{ loc: "body.tz", msg: expect.stringContaining("unknown time zone") }])
    expect(errorsOf({ kind: "interval", interval_seconds: 60, zone: "UTC" })).toEqual([{ loc: "body.zone", msg: expect.stringContaining("excess") }])
    expect(errorsOf({ kind: "interval", interval_seconds: 1.5 })[0]?.loc).toBe("body.interval_seconds")
    expect(errorsOf({ kind: "interval" })[0]?.loc).toBe("body.interval_seconds")
    expect(errorsOf({ kind: "weekly" })).toEqual([{ loc: "body", msg: expect.stringContaining("kind") }])
  })

  it("validates the minimum interval for intervals and for the gap between cron slots", () => {
    expect(validateSchedule({ kind: "interval", interval_seconds: 59 }, 60)).toEqual({ path: ["interval_seconds"], message: "interval_seconds must be at least 60" })
    expect(validateSchedule({ kind: "interval", interval_seconds: 60 }, 60)).toBeUndefined()
    expect(validateSchedule({ kind: "cron", expr: "*/30 * * * * *" }, 60)).toMatchObject({ path: ["expr"], message: expect.stringContaining("30 s apart") })
    expect(validateSchedule({ kind: "cron", cron: "* * * * *" }, 300)).toMatchObject({ path: ["cron"], message: expect.stringContaining("60 s apart") })
    // Two slots a minute apart once a day (23:59 and 00:00) are refused under a 5-minute minimum.
    expect(validateSchedule({ kind: "cron", expr: "0,59 0,23 * * *" }, 300)).toMatchObject({ path: ["expr"] })
    expect(validateSchedule({ kind: "cron", expr: "*/5 * * * *", tz: "America/New_York" }, 300)).toBeUndefined()
    expect(validateSchedule({ kind: "cron", expr: "* * * * *" }, 60)).toBeUndefined()
    expect(validateSchedule({ kind: "cron", expr: "0 9 * * *", tz: "Nowhere/Special" }, 60)).toMatchObject({ path: ["tz"] })
  })

  it("finds cron slots in the schedule's zone across a daylight-saving change", () => {
    // 09:00 in Berlin is 08:00 UTC in winter and 07:00 UTC in summer (the change: 2025-03-30).
    const nineInBerlin = { kind: "cron", expr: "0 9 * * *", tz: "Europe/Berlin" } as const
    expect(nextSlot(nineInBerlin, at("2025-03-29T08:00:00Z")).toISOString()).toBe("2025-03-30T07:00:00.000Z")
    expect(nextSlot(nineInBerlin, at("2025-03-28T12:00:00Z")).toISOString()).toBe("2025-03-29T08:00:00.000Z")
    // 02:30 does not exist on the day of the change: the slot fires once that day, after the gap.
    const halfPastTwo = { kind: "cron", expr: "30 2 * * *", tz: "Europe/Berlin" } as const
    const onChangeDay = nextSlot(halfPastTwo, at("2025-03-29T01:30:00Z"))
    expect(onChangeDay.toISOString().slice(0, 10)).toBe("2025-03-30")
    expect(nextSlot(halfPastTwo, onChangeDay).toISOString()).toBe("2025-03-31T00:30:00.000Z")
    // The same expression in UTC ignores Berlin's change.
    expect(nextSlot({ kind: "cron", expr: "0 9 * * *" }, at("2025-03-29T09:00:00Z")).toISOString()).toBe("2025-03-30T09:00:00.000Z")
  })

  it("anchors interval slots so they do not drift, strictly after the given time", () => {
    const everyMinute = { kind: "interval", interval_seconds: 60 } as const
    const anchor = at("2025-01-01T00:00:10Z")
    expect(nextSlot(everyMinute, at("2025-01-01T00:05:30Z"), anchor).toISOString()).toBe("2025-01-01T00:06:10.000Z")
    expect(nextSlot(everyMinute, at("2025-01-01T00:06:10Z"), anchor).toISOString()).toBe("2025-01-01T00:07:10.000Z")
    expect(nextSlot(everyMinute, at("2025-01-01T00:00:00Z"), anchor).toISOString()).toBe("2025-01-01T00:00:10.000Z")
    // Without an anchor: one interval from the given time.
    expect(nextSlot(everyMinute, at("2025-01-01T00:00:03Z")).toISOString()).toBe("2025-01-01T00:01:03.000Z")
  })
})

// ---------------------------------------------------------------------------------------------
// The scheduler on PostgreSQL
// ---------------------------------------------------------------------------------------------


/** A database of this file on the tier's server, with the migrations applied; dropped at the end. */
const DatabaseLive = Layer.unwrap(Effect.gen(function*() {
  const url = new URL(yield* freshDatabase("schedules"))
  const dataDir = yield* freshDataDir("wa-schedules")
  return databaseLayer("own").pipe(
    Layer.provideMerge(AppConfig.layerFrom({ DATABASE_URL: url.toString(), WA_DATA_DIR: dataDir, WA_LOG_LEVEL: "Error" })),
    // The failure tests log their expected warnings; errors still show.
    Layer.provideMerge(Layer.succeed(References.MinimumLogLevel, "Error"))
  )
}))

const T0 = Date.parse("2030-01-01T00:00:00Z")
const seconds = (n: number) => new Date(T0 + n * 1000)

/** A handler that records what it was called with. */
const recorder = () => {
  const calls: Array<{ readonly id: string; readonly slot: string }> = []
  const fire: FireHandler = (id, slot) => Effect.sync(() => void calls.push({ id, slot: slot.toISOString() }))
  return { calls, fire, slotsOf: (id: string) => calls.filter((c) => c.id === id).map((c) => c.slot) }
}

const iso = (n: number) => seconds(n).toISOString()
const setTime = (n: number) => TestClock.setTime(T0 + n * 1000)
const scheduler = (options: Partial<Parameters<typeof Schedules.make>[0]> = {}) => Schedules.make({ pollMs: 500, loop: false, ...options })

const firingRows = (kind: string) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    return yield* sql<{ owner_id: string; slot_at: Date; attempts: number; dispatched_at: Date | null; last_error: string | null }>`
      SELECT owner_id, slot_at, attempts, dispatched_at, last_error FROM schedule_firings WHERE owner_kind = ${kind} ORDER BY owner_id, slot_at`
  }).pipe(Effect.orDie)

layer(DatabaseLive, { excludeTestServices: true })("scheduler", (it) => {
  it.effect("fires each slot once, on the interval's grid and on a cron's slots", () =>
    Effect.gen(function*() {
      yield* setTime(0)
      const schedules = yield* scheduler()
      const { fire, slotsOf } = recorder()
      yield* schedules.register("each", fire)
      yield* schedules.set({ kind: "each", id: "every-minute" }, { kind: "interval", interval_seconds: 60 })
      yield* schedules.set({ kind: "each", id: "every-2-min" }, { kind: "cron", cron: "*/2 * * * *" })
      expect(yield* schedules.runDue).toBe(0)
      for (let minute = 1; minute <= 4; minute++) {
        yield* setTime(minute * 60)
        expect(yield* schedules.runDue).toBe(minute % 2 === 0 ? 2 : 1)
        expect(yield* schedules.runDue).toBe(0) // the same slot never fires twice
        yield* setTime(minute * 60 + 30)
        expect(yield* schedules.runDue).toBe(0)
      }
      expect(slotsOf("every-minute")).toEqual([iso(60), iso(120), iso(180), iso(240)])
      expect(slotsOf("every-2-min")).toEqual([iso(120), iso(240)])
      const state = yield* schedules.get({ kind: "each", id: "every-minute" })
      expect(state).toMatchObject({ paused: false, last_slot_at: seconds(240), next_fire_at: seconds(300), spec: { kind: "interval", interval_seconds: 60 } })
      expect((yield* schedules.get({ kind: "each", id: "every-2-min" }))?.spec).toEqual({ kind: "cron", expr: "*/2 * * * *", tz: "UTC" })
      const rows = yield* firingRows("each")
      expect(rows).toHaveLength(6)
      expect(rows.every((row) => row.dispatched_at !== null && row.attempts === 1)).toBe(true)
    }).pipe(Effect.provide(TestClock.layer())))

  it.effect("after downtime a schedule fires once to catch up, then on its grid again", () =>
    Effect.gen(function*() {
      yield* setTime(0)
      const schedules = yield* scheduler()
      const { fire, slotsOf } = recorder()
      yield* schedules.register("catch-up", fire)
      yield* schedules.set({ kind: "catch-up", id: "m" }, { kind: "interval", interval_seconds: 60 }, { anchor: seconds(0), firstAt: seconds(60) })
      // Nobody looked for ten minutes and a bit: ten slots passed.
      yield* setTime(665)
      expect(yield* schedules.runDue).toBe(1)
      expect(yield* schedules.runDue).toBe(0)
      expect(slotsOf("m")).toEqual([iso(60)])
      expect((yield* schedules.get({ kind: "catch-up", id: "m" }))?.next_fire_at).toEqual(seconds(720))
      yield* setTime(720)
      expect(yield* schedules.runDue).toBe(1)
      expect(slotsOf("m")).toEqual([iso(60), iso(720)])
    }).pipe(Effect.provide(TestClock.layer())))

  it.effect("a paused schedule does not fire; resumed, it fires from the next slot on its grid", () =>
    Effect.gen(function*() {
      yield* setTime(0)
      const schedules = yield* scheduler()
      const { fire, slotsOf } = recorder()
      yield* schedules.register("pause", fire)
      const owner = { kind: "pause", id: "m" }
      yield* schedules.set(owner, { kind: "interval", interval_seconds: 60 })
      yield* setTime(60)
      expect(yield* schedules.runDue).toBe(1)
      // Resuming a schedule that is not paused changes nothing.
      yield* setTime(90)
      expect(yield* schedules.resume(owner)).toBe(true)
      expect((yield* schedules.get(owner))?.next_fire_at).toEqual(seconds(120))
      expect(yield* schedules.pause(owner)).toBe(true)
      expect(yield* schedules.get(owner)).toMatchObject({ paused: true, next_fire_at: null, last_slot_at: seconds(60) })
      yield* setTime(400)
      expect(yield* schedules.runDue).toBe(0)
      expect(yield* schedules.resume(owner)).toBe(true)
      expect(yield* schedules.get(owner)).toMatchObject({ paused: false, next_fire_at: seconds(420) })
      yield* setTime(420)
      expect(yield* schedules.runDue).toBe(1)
      expect(slotsOf("m")).toEqual([iso(60), iso(420)])
      // Removed: no schedule, no firings, nothing more fires.
      yield* schedules.remove(owner)
      expect(yield* schedules.get(owner)).toBeUndefined()
      expect(yield* firingRows("pause")).toHaveLength(0)
      expect(yield* schedules.pause(owner)).toBe(false)
      expect(yield* schedules.resume(owner)).toBe(false)
      yield* setTime(600)
      expect(yield* schedules.runDue).toBe(0)
    }).pipe(Effect.provide(TestClock.layer())))

  it.effect("set joins the caller's transaction; owners of a kind nobody registered are left alone", () =>
    Effect.gen(function*() {
      yield* setTime(0)
      const sql = yield* SqlClient.SqlClient
      const schedules = yield* scheduler()
      const owner = { kind: "unregistered", id: "m" }
      const rolledBack = yield* sql.withTransaction(
        schedules.set(owner, { kind: "interval", interval_seconds: 60 }).pipe(Effect.andThen(Effect.fail("roll back")))
      ).pipe(Effect.flip)
      expect(rolledBack).toBe("roll back")
      expect(yield* schedules.get(owner)).toBeUndefined()
      yield* sql.withTransaction(schedules.set(owner, { kind: "interval", interval_seconds: 60 }))
      const { fire, slotsOf } = recorder()
      yield* schedules.register("someone-else", fire)
      yield* setTime(90)
      expect(yield* schedules.runDue).toBe(0)
      expect((yield* schedules.get(owner))?.next_fire_at).toEqual(seconds(60))
      // A process that registers the kind fires it (once, for the slot that was due).
      yield* schedules.register("unregistered", fire)
      expect(yield* schedules.runDue).toBe(1)
      expect(slotsOf("m")).toEqual([iso(60)])
    }).pipe(Effect.provide(TestClock.layer())))

  it.effect("two schedulers on one database fire every slot of every schedule exactly once", () =>
    Effect.gen(function*() {
      yield* setTime(0)
      // Small batches, so the two take turns on the rows within a slot.
      const a = yield* scheduler({ batchSize: 7 })
      const b = yield* scheduler({ batchSize: 7 })
      const seenA = recorder()
      const seenB = recorder()
      yield* a.register("race", seenA.fire)
      yield* b.register("race", seenB.fire)
      const owners = Array.from({ length: 60 }, (_, i) => `m${String(i).padStart(2, "0")}`)
      yield* Effect.forEach(owners, (id) => a.set({ kind: "race", id }, { kind: "interval", interval_seconds: 60 }, { anchor: seconds(0) }), { discard: true })
      const slots = 5
      for (let k = 1; k <= slots; k++) {
        yield* setTime(k * 60)
        // Both pass at once until neither finds anything (no pass is then in flight to hold rows).
        while (true) {
          const [fromA, fromB] = yield* Effect.all([a.runDue, b.runDue], { concurrency: 2 })
          if (fromA === 0 && fromB === 0) break
        }
      }
      const all = [...seenA.calls, ...seenB.calls].map((c) => `${c.id}@${c.slot}`)
      expect(new Set(all).size).toBe(all.length)
      expect(all).toHaveLength(owners.length * slots)
      for (const id of owners) {
        expect([...seenA.slotsOf(id), ...seenB.slotsOf(id)].sort()).toEqual([iso(60), iso(120), iso(180), iso(240), iso(300)])
      }
      // Both did some of the work.
      expect(seenA.calls.length).toBeGreaterThan(0)
      expect(seenB.calls.length).toBeGreaterThan(0)
      const rows = yield* firingRows("race")
      expect(rows).toHaveLength(owners.length * slots)
      expect(rows.every((row) => row.dispatched_at !== null && row.attempts === 1)).toBe(true)
    }).pipe(Effect.provide(TestClock.layer())))

  it.effect("a firing whose handler failed is dispatched again after the grace period, with backoff", () =>
    Effect.gen(function*() {
      yield* setTime(0)
      const schedules = yield* scheduler({ graceMs: 10_000 })
      const attempts: Array<string> = []
      yield* schedules.register("flaky", (id, slot) =>
        Effect.suspend(() => {
          attempts.push(`${id}@${slot.toISOString()}`)
          return attempts.length <= 2 ? Effect.fail(new Error(`attempt ${attempts.length} fails`)) : Effect.void
        }))
      yield* schedules.set({ kind: "flaky", id: "m" }, { kind: "interval", interval_seconds: 3600 }, { firstAt: seconds(60) })
      yield* setTime(60)
      expect(yield* schedules.runDue).toBe(0)
      expect(yield* firingRows("flaky")).toMatchObject([{ attempts: 1, dispatched_at: null, last_error: expect.stringContaining("attempt 1 fails") }])
      yield* setTime(69)
      expect(yield* schedules.runDue).toBe(0)
      expect(attempts).toHaveLength(1) // still leased
      yield* setTime(70)
      expect(yield* schedules.runDue).toBe(0)
      expect(attempts).toHaveLength(2)
      // The second failure backs off twice the grace period.
      yield* setTime(89)
      expect(yield* schedules.runDue).toBe(0)
      expect(attempts).toHaveLength(2)
      yield* setTime(90)
      expect(yield* schedules.runDue).toBe(1)
      expect(attempts).toEqual([`m@${iso(60)}`, `m@${iso(60)}`, `m@${iso(60)}`])
      const [row] = yield* firingRows("flaky")
      expect(row).toMatchObject({ attempts: 3, last_error: null, dispatched_at: seconds(90) })
      yield* setTime(200)
      expect(yield* schedules.runDue).toBe(0)
    }).pipe(Effect.provide(TestClock.layer())))

  it.effect("a handler that hangs is cut off at half the grace period and its firing dispatched again", () =>
    Effect.gen(function*() {
      yield* setTime(0)
      const schedules = yield* scheduler({ graceMs: 10_000 })
      const entered = yield* Deferred.make<void>()
      let calls = 0
      yield* schedules.register("hangs", () =>
        Effect.suspend(() => ++calls === 1 ? Effect.andThen(Deferred.succeed(entered, undefined), Effect.never) : Effect.void))
      yield* schedules.set({ kind: "hangs", id: "m" }, { kind: "interval", interval_seconds: 3600 }, { firstAt: seconds(60) })
      yield* setTime(60)
      const pass = yield* Effect.forkChild(schedules.runDue)
      yield* Deferred.await(entered)
      // A second at a time (the cut-off's timer may start just after the handler): done by 5 s.
      for (let second = 1; second <= 9 && pass.pollUnsafe() === undefined; second++) yield* TestClock.adjust("1 second")
      expect(yield* Fiber.join(pass)).toBe(0)
      expect(yield* firingRows("hangs")).toMatchObject([{ attempts: 1, dispatched_at: null, last_error: expect.stringContaining("Timeout") }])
      yield* setTime(70)
      expect(yield* schedules.runDue).toBe(1)
      expect(calls).toBe(2)
    }).pipe(Effect.provide(TestClock.layer())))

  it.effect("a firing recorded by a process that died before dispatching it is dispatched by another", () =>
    Effect.gen(function*() {
      yield* setTime(0)
      const dying = yield* scheduler({ graceMs: 10_000 })
      const survivor = yield* scheduler({ graceMs: 10_000 })
      const entered = yield* Deferred.make<void>()
      yield* dying.register("orphan", () => Effect.andThen(Deferred.succeed(entered, undefined), Effect.never))
      yield* survivor.register("someone-else", () => Effect.void)
      yield* dying.set({ kind: "orphan", id: "m" }, { kind: "interval", interval_seconds: 3600 }, { firstAt: seconds(60) })
      yield* setTime(60)
      const pass = yield* Effect.forkChild(dying.runDue)
      yield* Deferred.await(entered)
      yield* Fiber.interrupt(pass) // the process is gone after its commit, before its dispatch
      expect(yield* firingRows("orphan")).toMatchObject([{ attempts: 1, dispatched_at: null }])
      const { fire, slotsOf } = recorder()
      yield* survivor.register("orphan", fire)
      expect(yield* survivor.runDue).toBe(0) // within the lease
      yield* setTime(70)
      expect(yield* survivor.runDue).toBe(1)
      expect(slotsOf("m")).toEqual([iso(60)])
      expect(yield* firingRows("orphan")).toMatchObject([{ attempts: 2, dispatched_at: seconds(70) }])
    }).pipe(Effect.provide(TestClock.layer())))

  it.effect("the background loops of two schedulers fire every schedule on its grid, no slot twice (live clock)", () =>
    Effect.gen(function*() {
      const a = yield* Schedules.make({ pollMs: 100 })
      const b = yield* Schedules.make({ pollMs: 100 })
      const seenA = recorder()
      const seenB = recorder()
      yield* a.register("live", seenA.fire)
      yield* b.register("live", seenB.fire)
      const anchor = new Date(Date.now() + 300)
      const owners = Array.from({ length: 10 }, (_, i) => `m${i}`)
      yield* Effect.forEach(owners, (id) =>
        a.set({ kind: "live", id }, { kind: "interval", interval_seconds: 1 }, { anchor, firstAt: anchor }), { discard: true })
      const slotsOf = (id: string) => [...seenA.slotsOf(id), ...seenB.slotsOf(id)]
      while (!owners.every((id) => new Set(slotsOf(id)).size >= 3)) yield* Effect.sleep("50 millis")
      const all = [...seenA.calls, ...seenB.calls].map((c) => `${c.id}@${c.slot}`)
      expect(new Set(all).size).toBe(all.length)
      for (const id of owners) {
        const slots = slotsOf(id).map((s) => Date.parse(s)).sort((x, y) => x - y)
        for (const slot of slots) expect((slot - anchor.getTime()) % 1000).toBe(0)
      }
      yield* Effect.forEach(owners, (id) => a.remove({ kind: "live", id }), { discard: true })
    }))
})
