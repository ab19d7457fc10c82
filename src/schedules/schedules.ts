/**
 * Durable schedules, shared by the products (Track monitors first, DoAnything scheduled sessions
 * later). The product names the owner (`{kind, id}`), stores its schedule with `set` (inside its
 * own transaction if it likes) and registers, once per process, the handler that fires an owner
 * of its kind for a slot; the handler hands the slot to the owning entity.
 *
 * Every process runs the same loop. A pass, in one transaction, claims due schedules
 * (`FOR UPDATE SKIP LOCKED`, a batch at a time), records a firing per schedule for its slot
 * (primary key owner + slot, `ON CONFLICT DO NOTHING`) and advances next_fire_at to the first slot
 * after now. So a slot is recorded once however many processes look, and after downtime a
 * schedule fires once to catch up, not once per missed slot. After the commit the pass calls the
 * handlers of the firings it recorded and marks them dispatched. A firing left undispatched (the
 * process died in between, the handler failed or hung) is dispatched again by any process once
 * its lease (the grace period) runs out, with backoff on repeated failures. Delivery to the
 * handler is therefore at least once per slot: handlers must be idempotent per (owner, slot).
 *
 * Time is the Effect Clock's (passed to the queries, not SQL's now()), so tests drive it with
 * TestClock. Owners of a kind no handler is registered for in this process are left to a process
 * that has one.
 */
import { Clock, Context, Duration, Effect, Exit, FiberSet, Layer, Metric, Queue, type Scope, Semaphore } from "effect"
import { AppConfig } from "../config/config.ts"
import { canonicalSchedule, nextFireAt, type ScheduleSpec, type StoredSchedule, validateSchedule } from "../domain/schedule-spec.ts"
import { type FiringRow, recordQueuedFiring, ScheduleStore, type ScheduleOwner } from "./schedule-store.ts"
import { withMethodSpans, withSpanIfTracing } from "../observability/spans.ts"

export type { ScheduleOwner }

/**
 * Records a firing for `slot` outside the timed slots (an event trigger), in the caller's
 * transaction (src/schedules/schedule-store.ts). Schedules.wake has this node look at once.
 */
export { recordQueuedFiring }

export interface ScheduleState {
  readonly spec: StoredSchedule
  /** The slot that fires next; null while paused. */
  readonly next_fire_at: Date | null
  readonly paused: boolean
  /** The slot fired last (null before the first). */
  readonly last_slot_at: Date | null
  /** Interval slots are anchor_at + k * interval_seconds. */
  readonly anchor_at: Date
}

/** Fires an owner for a slot. Called at least once per slot, so it must be idempotent. */
export type FireHandler = (ownerId: string, slot: Date) => Effect.Effect<void, unknown>

export interface SchedulerOptions {
  /** How long the loop waits at most before looking again (it wakes earlier for a slot due sooner). */
  readonly pollMs: number
  /** Lease of a dispatch: a firing not marked dispatched within it is dispatched again (a handler call is cut off at half of it). */
  readonly graceMs?: number | undefined
  /** Schedules (and retried firings) one pass claims at most. */
  readonly batchSize?: number | undefined
  /** Handler calls in flight at once per process. */
  readonly concurrency?: number | undefined
  /** Dispatched firings are kept this long, then pruned. */
  readonly retentionMs?: number | undefined
  /** false: no background loop; `runDue` drives passes (tests). */
  readonly loop?: boolean | undefined
}

const DEFAULT_GRACE_MS = 10_000
const DEFAULT_BATCH = 500
const DEFAULT_CONCURRENCY = 128
const DEFAULT_RETENTION_MS = 3_600_000
const PRUNE_EVERY_MS = 5 * 60_000
const PRUNE_BATCH = 100_000
/** Retries back off as grace * 2^n, n at most this. */
const MAX_BACKOFF_EXPONENT = 6
/** Least wait between passes when something is due but locked by another process. */
const MIN_WAIT_MS = 50

export const schedulerMetrics = {
  fired: Metric.counter("wa_schedule_firings_total", { description: "Schedule slots recorded (fired) by this process", incremental: true }),
  redispatched: Metric.counter("wa_schedule_redispatches_total", { description: "Undispatched firings this process dispatched again", incremental: true }),
  failed: Metric.counter("wa_schedule_dispatch_failures_total", { description: "Firing handler calls that failed or timed out", incremental: true }),
  lateness: Metric.histogram("wa_schedule_lateness_ms", {
    description: "How long after its slot a firing was recorded",
    boundaries: [10, 50, 100, 250, 500, 1000, 2000, 5000, 10_000, 60_000]
  })
}

export class Schedules extends Context.Service<Schedules, {
  /**
   * Creates or replaces the owner's schedule. The first slot is `firstAt` (e.g. now, to fire at
   * once), else the first slot after now. Interval slots are anchored at `anchor` (default now).
   * `paused: true` stores it paused. Runs on the ambient SQL client, so it joins the caller's
   * `sql.withTransaction`. The spec must be valid (see validateSchedule); an invalid one is a defect.
   */
  readonly set: (owner: ScheduleOwner, spec: ScheduleSpec | StoredSchedule, options?: {
    readonly anchor?: Date | undefined
    readonly firstAt?: Date | undefined
    readonly paused?: boolean | undefined
  }) => Effect.Effect<void>
  /**
   * Looks for work now instead of at the next poll: after a firing was recorded outside the timed
   * slots (recordQueuedFiring, an event trigger), so this node dispatches it at once.
   */
  readonly wake: Effect.Effect<void>
  /** Stops firing (next_fire_at NULL); false when the owner has no schedule. */
  readonly pause: (owner: ScheduleOwner) => Effect.Effect<boolean>
  /** A paused schedule fires again from the first slot after now (missed slots are not fired); false when the owner has no schedule. */
  readonly resume: (owner: ScheduleOwner) => Effect.Effect<boolean>
  /** Deletes the schedule and its firings. */
  readonly remove: (owner: ScheduleOwner) => Effect.Effect<void>
  readonly get: (owner: ScheduleOwner) => Effect.Effect<ScheduleState | undefined>
  /**
   * This process fires owners of `kind` with `fire` until the caller's scope closes (register it
   * while building the product's layer). A later registration of the same kind replaces it.
   */
  readonly register: (kind: string, fire: FireHandler) => Effect.Effect<void, never, Scope.Scope>
  /** One pass now: claims and dispatches what is due. The loop calls it; tests and benches may too. Returns the firings dispatched. */
  readonly runDue: Effect.Effect<number>
}>()("wa/schedules/Schedules") {
  /** The service with its loop forked in the current scope. */
  static readonly make = (options: SchedulerOptions) => makeSchedules(options)

  static readonly layer = Layer.effect(
    Schedules,
    Effect.gen(function*() {
      const config = yield* AppConfig
      return yield* makeSchedules({ pollMs: config.schedulerPollMs })
    })
  )
}

export const SchedulesLive = Schedules.layer

const makeSchedules = Effect.fnUntraced(function*(options: SchedulerOptions) {
  const store = yield* ScheduleStore.make
  const graceMs = options.graceMs ?? DEFAULT_GRACE_MS
  const batch = options.batchSize ?? DEFAULT_BATCH
  const concurrency = options.concurrency ?? DEFAULT_CONCURRENCY
  const retentionMs = options.retentionMs ?? DEFAULT_RETENTION_MS
  const handlers = new Map<string, FireHandler>()
  const wake = yield* Queue.sliding<void>(1)
  const wakeLoop = Queue.offer(wake, undefined).pipe(Effect.asVoid)
  const now = Effect.map(Clock.currentTimeMillis, (millis) => new Date(millis))

  /** Schedules of registered kinds that are due: recorded as firings and advanced, in one transaction. */
  const claimDue = (kinds: ReadonlyArray<string>, at: Date) =>
    Effect.gen(function*() {
      const { claimed, fresh, stopped } = yield* store.claimDue({
        kinds,
        at,
        batch,
        retryAt: new Date(at.getTime() + graceMs),
        // Validation refuses timed schedules without a next slot; a stored one that has none stops here.
        nextOf: (spec, anchorAt) => nextFireAt(spec, at, anchorAt)
      })
      for (const owner of stopped) yield* Effect.logWarning("schedule has no next slot; it stops").pipe(Effect.annotateLogs({ owner_kind: owner.kind, owner_id: owner.id }))
      return { claimed, fresh }
    })

  /** Firings of registered kinds whose lease ran out undispatched: leased again, with backoff. */
  const claimRetries = (kinds: ReadonlyArray<string>, at: Date) =>
    store.claimRetries({ kinds, at, batch, graceMs, maxBackoffExponent: MAX_BACKOFF_EXPONENT })

  /** Marks the firings whose handlers succeeded, in one statement. */
  const markDispatched = (firings: ReadonlyArray<FiringRow>) =>
    firings.length === 0 ? Effect.void : Effect.flatMap(now, (at) => store.markDispatched(firings, at))

  const markFailed = (firing: FiringRow, error: string) => store.markFailed(firing, error.slice(0, 2000))

  /**
   * Calls the kind's handler, cut off at half the lease (so the pass marks its batch before the
   * lease runs out), and records a failure. True when the handler succeeded. Never fails.
   */
  const dispatch = (firing: FiringRow & { readonly attempts?: number }) => {
    const fire = handlers.get(firing.owner_kind)
    // Unregistered since the claim (its layer is closing): the lease runs out and another process takes it.
    if (fire === undefined) return Effect.succeed(false)
    return fire(firing.owner_id, firing.slot_at).pipe(
      Effect.timeout(Duration.millis(graceMs / 2)),
      Effect.exit,
      Effect.flatMap((exit) =>
        Exit.isSuccess(exit)
          ? Effect.succeed(true)
          : Effect.gen(function*() {
            yield* Metric.update(schedulerMetrics.failed, 1)
            const error = String(Exit.isFailure(exit) ? exit.cause : "")
            yield* Effect.logWarning("schedule firing failed; it is dispatched again after the grace period").pipe(
              Effect.annotateLogs({
                owner_kind: firing.owner_kind,
                owner_id: firing.owner_id,
                slot: firing.slot_at.toISOString(),
                attempts: firing.attempts ?? 1,
                error
              })
            )
            yield* markFailed(firing, error)
            return false
          })
      ),
      Effect.catchCause((cause) => Effect.as(Effect.logWarning("recording a schedule firing's failure failed", cause), false)),
      // Not a method: the span of one dispatch, the root of the firing's trace (the loop is no request).
      withSpanIfTracing("Schedules.fire", () => ({
        "schedule.owner_kind": firing.owner_kind,
        "schedule.owner_id": firing.owner_id,
        "schedule.slot": firing.slot_at.toISOString()
      }))
    )
  }

  /** Handler calls in flight in this process, over every pass. */
  const permits = yield* Semaphore.make(concurrency)

  /** Dispatches claimed firings (at most `concurrency` handler calls at once) and marks those that succeeded. */
  const dispatchAll = (firings: ReadonlyArray<FiringRow & { readonly attempts?: number }>) =>
    Effect.gen(function*() {
      const outcomes = yield* Effect.forEach(firings, (firing) => Semaphore.withPermits(permits, 1, dispatch(firing)), { concurrency: "unbounded" })
      const succeeded = firings.filter((_, i) => outcomes[i])
      yield* markDispatched(succeeded)
      return succeeded.length
    })

  /** Claims what is due (fresh slots and expired leases); `busy` when a batch came back full (more may be due at once). */
  const claim = Effect.gen(function*() {
    const kinds = [...handlers.keys()]
    if (kinds.length === 0) return { firings: [], busy: false }
    const at = yield* now
    const { claimed, fresh } = yield* claimDue(kinds, at)
    const retries = yield* claimRetries(kinds, at)
    for (const firing of fresh) yield* Metric.update(schedulerMetrics.lateness, Math.max(0, at.getTime() - firing.slot_at.getTime()))
    if (fresh.length > 0) yield* Metric.update(schedulerMetrics.fired, fresh.length)
    if (retries.length > 0) yield* Metric.update(schedulerMetrics.redispatched, retries.length)
    return { firings: [...fresh, ...retries] as ReadonlyArray<FiringRow & { readonly attempts?: number }>, busy: claimed >= batch || retries.length >= batch }
  })

  /** One pass that waits for its dispatches (runDue: tests and benches count what it dispatched). */
  const pass = Effect.gen(function*() {
    const { firings, busy } = yield* claim
    return { dispatched: yield* dispatchAll(firings), busy }
  }).pipe(Effect.orDie)

  // The loop does not wait for a pass's dispatches before it claims again: a slow handler call
  // (a busy entity, a slow database) would otherwise make every slot due meanwhile late. It stops
  // claiming while more than a few batches' worth of firings are still being dispatched here, so
  // claimed firings do not outlive their lease waiting for a permit.
  const dispatching = yield* FiberSet.make()
  let inFlight = 0
  const inFlightLimit = Math.max(batch, concurrency * 4)
  const loopPass = Effect.gen(function*() {
    if (inFlight >= inFlightLimit) return { busy: false }
    const { firings, busy } = yield* claim
    if (firings.length > 0) {
      inFlight += firings.length
      yield* FiberSet.run(dispatching, dispatchAll(firings).pipe(
        Effect.catchCause((cause) => Effect.logWarning("dispatching schedule firings failed; their lease runs out and they are dispatched again", cause)),
        Effect.ensuring(Effect.suspend(() => {
          inFlight -= firings.length
          return wakeLoop
        }))
      ))
    }
    return { busy: busy && inFlight < inFlightLimit }
  }).pipe(Effect.orDie)

  /** How long to wait for the next due slot or retry of a registered kind, at most the poll interval. */
  const untilDue = Effect.gen(function*() {
    const kinds = [...handlers.keys()]
    if (kinds.length === 0) return options.pollMs
    const at = yield* now
    const due = yield* store.nextDue(kinds)
    if (due === null) return options.pollMs
    return Math.min(options.pollMs, Math.max(Math.min(MIN_WAIT_MS, options.pollMs), due.getTime() - at.getTime()))
  }).pipe(Effect.orDie)

  /** Deletes dispatched firings past the retention, a bounded batch at a time. */
  const prune = Effect.gen(function*() {
    const at = yield* now
    yield* store.prune(new Date(at.getTime() - retentionMs), PRUNE_BATCH)
  }).pipe(Effect.orDie)

  if (options.loop !== false) {
    yield* Effect.gen(function*() {
      let prunedAt = 0
      while (true) {
        const { busy } = yield* loopPass.pipe(
          Effect.catchCause((cause) => Effect.as(Effect.logWarning("scheduler pass failed", cause), { busy: false }))
        )
        if (busy) continue
        const at = yield* Clock.currentTimeMillis
        if (at - prunedAt >= PRUNE_EVERY_MS) {
          prunedAt = at
          yield* prune.pipe(Effect.catchCause((cause) => Effect.logWarning("pruning schedule firings failed", cause)))
        }
        const waitMs = yield* untilDue.pipe(Effect.catchCause(() => Effect.succeed(options.pollMs)))
        yield* Queue.take(wake).pipe(Effect.timeoutOption(Duration.millis(waitMs)))
      }
    }).pipe(Effect.forkScoped)
  }

  const set = Effect.fn("Schedules.set")(function*(owner: ScheduleOwner, spec: ScheduleSpec | StoredSchedule, setOptions?: {
    readonly anchor?: Date | undefined
    readonly firstAt?: Date | undefined
    readonly paused?: boolean | undefined
  }) {
    const timed = spec.kind === "cron" || spec.kind === "interval"
    const problem = timed ? validateSchedule(spec, 0) : undefined
    if (problem !== undefined) return yield* Effect.die(new Error(`invalid schedule for ${owner.kind} ${owner.id}: ${problem.path.join(".")}: ${problem.message}`))
    const canonical: StoredSchedule = timed ? canonicalSchedule(spec) : spec as StoredSchedule
    const at = yield* now
    const anchor = setOptions?.anchor ?? at
    const paused = setOptions?.paused === true
    const next = paused ? null : setOptions?.firstAt ?? nextFireAt(canonical, at, anchor)
    yield* store.upsert(owner, { spec: canonical, anchor, next: next ?? null, paused, at })
    yield* wakeLoop
  })

  const pause = Effect.fn("Schedules.pause")(function*(owner: ScheduleOwner) {
    const at = yield* now
    return yield* store.pause(owner, at)
  })

  const resume = Effect.fn("Schedules.resume")(function*(owner: ScheduleOwner) {
    const at = yield* now
    const row = yield* store.get(owner)
    if (row === undefined) return false
    // Not paused: its next slot stands (moving it could skip a slot that is due).
    if (!row.paused) return true
    const next = nextFireAt(row.spec, at, row.anchor_at)
    yield* store.unpause(owner, next ?? null, at)
    yield* wakeLoop
    return true
  })

  const remove = Effect.fn("Schedules.remove")(function*(owner: ScheduleOwner) {
    yield* store.remove(owner)
  })

  const get = Effect.fn("Schedules.get")(function*(owner: ScheduleOwner) {
    const row = yield* store.get(owner)
    if (row === undefined) return undefined
    return {
      spec: row.spec,
      next_fire_at: row.next_fire_at,
      paused: row.paused,
      last_slot_at: row.last_slot_at,
      anchor_at: row.anchor_at
    } satisfies ScheduleState
  })

  const register = (kind: string, fire: FireHandler) =>
    Effect.acquireRelease(
      Effect.andThen(Effect.sync(() => handlers.set(kind, fire)), wakeLoop),
      () => Effect.sync(() => {
        if (handlers.get(kind) === fire) handlers.delete(kind)
      })
    ).pipe(Effect.asVoid)

  return Schedules.of({
    ...withMethodSpans("Schedules", { register }),
    set,
    wake: wakeLoop,
    pause,
    resume,
    remove,
    get,
    runDue: Effect.map(pass, ({ dispatched }) => dispatched)
  })
})
