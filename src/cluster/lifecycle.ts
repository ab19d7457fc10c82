/**
 * Graceful shutdown of a runner. On SIGTERM the process closes its layers in reverse order: the
 * HTTP server stops first, then this drain waits (up to WA_DRAIN_SECONDS) for the runs executing
 * on this runner to end, and only then do the entities stop and Effect Cluster hand the shards
 * over (unregister the runner, interrupt its entities, release the shard locks). A run still going
 * when the drain times out is interrupted; its persisted Execute message is left unprocessed and is
 * delivered again on the runner that takes the shard, which resumes the half-done run.
 *
 * While it drains, the runner starts no new work: an Execute for a run that is not executing here
 * yet (a follow-up, a new session on one of its shards, a run handed over from a dead runner) is
 * left unprocessed, without a write, and runs on the runner that takes the shard (`runHere` and
 * `leaveForNextOwner` below, used by the Session and DeepResearch entities). The drain does not
 * count or wait for those.
 *
 * The runner does keep its shards, and could even acquire more (if another runner leaves during
 * the drain), until the drain ends: Effect Cluster 4.1 has no way to stop acquiring while keeping
 * the shards held. Only its internal shutdown stops acquisition, and it starts when the entities
 * stop; unregistering the runner from RunnerStorage ourselves is undone by Sharding (it registers
 * itself again) and marking it unhealthy moves its shards away at once, interrupting the runs the
 * drain waits for. Work arriving on such a shard is left for the next owner like any other.
 */
import { Context, Duration, Effect, Fiber, Layer, Ref, Schedule } from "effect"
import { ClusterSchema, Entity, Sharding } from "effect/cluster"
import { AppConfig } from "../config/config.ts"
import { runsInFlight, trackRunInFlight } from "./metrics.ts"
import type { RunId } from "../domain/run.ts"

/** Whether this process is shutting down (the runner's /readyz turns 503 so balancers stop sending). */
export class RunnerLifecycle extends Context.Service<RunnerLifecycle, {
  readonly draining: Effect.Effect<boolean>
  readonly startDraining: Effect.Effect<void>
}>()("wa/cluster/RunnerLifecycle") {
  static readonly layer = Layer.effect(
    RunnerLifecycle,
    Effect.gen(function*() {
      const draining = yield* Ref.make(false)
      return RunnerLifecycle.of({ draining: Ref.get(draining), startDraining: Ref.set(draining, true) })
    })
  )
}

/**
 * Ends the current handler with Effect Cluster's abandon interrupt (ClusterSchema.Abandon). The
 * EntityManager does not answer a persisted request abandoned by a runner that no longer holds
 * its shard: no reply is stored, the message stays unprocessed and the shard's next owner, which
 * resets the shard's unprocessed messages when it acquires it, receives it. A plain interrupt or
 * a return would instead be saved as the reply and the run would never start.
 */
const abandonToNextOwner: Effect.Effect<never> = Effect.withFiber((fiber) =>
  Fiber.interruptAs(fiber, fiber.id, ClusterSchema.Abandon.annotation)
).pipe(Effect.andThen(Effect.never))

/**
 * Runs an entity's `start` of a run here, unless the runner drains ("refused"). The run counts as
 * in flight from before the check: the drain sets its flag before it counts runs, so a run that
 * passes the check is one the drain waits for, and one that starts later sees the flag.
 */
export const runHere = <E, R>(lifecycle: RunnerLifecycle["Service"], start: Effect.Effect<void, E, R>): Effect.Effect<"handled" | "refused", E, R> =>
  trackRunInFlight(Effect.gen(function*() {
    if (yield* lifecycle.draining) return "refused" as const
    yield* start
    return "handled" as const
  }))

/**
 * A draining runner's answer to an Execute it will not run: nothing is written (the run stays
 * pending, or running at its last checkpoint), and once this runner no longer holds the entity's
 * shard (it shuts down after the drain, or the shard moved) the message is abandoned to the next
 * owner. Not counted in flight, so the drain does not wait for it.
 */
export const leaveForNextOwner = (
  sharding: Sharding.Sharding["Service"],
  address: Entity.CurrentAddress["Service"],
  runId: RunId
): Effect.Effect<never> =>
  Effect.gen(function*() {
    yield* Effect.logInfo("draining: run left for the runner that takes its shard").pipe(
      Effect.annotateLogs({ run_id: runId, entity: `${address.entityType}/${address.entityId}` })
    )
    yield* Effect.sync(() => sharding.hasShardId(address.shardId)).pipe(
      Effect.repeat({ schedule: Schedule.spaced("100 millis"), until: (held) => !held })
    )
    return yield* abandonToNextOwner
  })

/**
 * The drain, as a finalizer: build this layer after the entities (so it closes before them) and,
 * in `wa serve`, before the HTTP server (so the API stops taking requests first).
 */
export const DrainLive = Layer.effectDiscard(Effect.gen(function*() {
  const config = yield* AppConfig
  const lifecycle = yield* RunnerLifecycle
  yield* Effect.addFinalizer(() =>
    Effect.gen(function*() {
      yield* lifecycle.startDraining
      const waiting = yield* runsInFlight
      if (waiting === 0 || config.drainSeconds === 0) return
      yield* Effect.logInfo("draining: waiting for runs in flight").pipe(Effect.annotateLogs({ runs: waiting, seconds: config.drainSeconds }))
      const left = yield* runsInFlight.pipe(
        Effect.repeat({ schedule: Schedule.spaced("200 millis"), until: (n) => n === 0 }),
        Effect.timeoutOption(Duration.seconds(config.drainSeconds))
      )
      if (left._tag === "None") {
        yield* Effect.logWarning("drain timed out: runs in flight are handed over with their shards").pipe(
          Effect.annotateLogs({ runs: yield* runsInFlight })
        )
      } else {
        yield* Effect.logInfo("drained")
      }
    })
  )
}))
