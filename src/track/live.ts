/**
 * Everything Track adds to a runner: the Monitors service (service.ts), the Monitor entity bound
 * to the tick executor (tick.ts) and the supervisor (supervisor.ts), and its store
 * (monitor-store.ts). What they stand on is provided below it, in src/server.ts.
 */
import { Effect, FiberMap, Layer } from "effect"
import { RunId } from "../domain/run.ts"
import { MonitorEntity } from "../entities/monitor.ts"
import { makeLeaveWhenRefused, makeRunExecutions } from "../runs/kernel.ts"
import { MonitorStore } from "./monitor-store.ts"
import { Monitors } from "./service.ts"
import { Supervisor } from "./supervisor.ts"
import { Budget } from "../billing/budget.ts"
import { ProfileStore } from "../profiles/profile-store.ts"
import { makeTickExecutor } from "./tick.ts"

/**
 * The Monitor entity's behaviour: a tick run is executed by the run kernel with the tick executor
 * (a `Fire` first makes its slot's tick run), as the Session entity executes each of its runs;
 * alignment turns go to the supervisor. The tick executor and the kernel's part of the execution
 * are built once with the layer: a Monitor entity is let go between its ticks, so what its
 * instance builds is built again for every tick (the executor's spans, its closures, its layers).
 */
const MonitorEntityLive = Layer.unwrap(Effect.gen(function*() {
  const ticks = yield* makeTickExecutor
  const supervisor = yield* Supervisor
  const executions = yield* makeRunExecutions(ticks.executor)
  return MonitorEntity.toLayer(
    Effect.gen(function*() {
      const leaveWhenRefused = yield* makeLeaveWhenRefused
      const fibers = yield* FiberMap.make<string>()
      // Added after the map: this finalizer runs before the map interrupts its fibers (ExecutionHost).
      let stopping = false
      yield* Effect.addFinalizer(() => Effect.sync(() => { stopping = true }))
      const execution = executions({ fibers, stopping: () => stopping })
      type Known = Parameters<typeof execution.handleExecute>[1]
      const executeTick = (tickId: RunId, known?: Known) => leaveWhenRefused(execution.handleExecute(tickId, known), tickId)
      return MonitorEntity.of({
        Tick: ({ payload }) => executeTick(payload.tickId),
        // The slot's tick run as made, and its monitor as read to make it, go to the kernel as they are.
        Fire: ({ payload }) =>
          ticks.slotTick(payload.monitorId, new Date(payload.slot)).pipe(
            Effect.flatMap((slot) => slot === undefined ? Effect.void : executeTick(slot.run.id, slot))
          ),
        Align: ({ payload }) => supervisor.step(payload.monitorId, payload.turn)
      })
    }),
    // Monitors tick every minute or less often: an idle entity is let go between ticks, so thousands
    // of monitors do not all stay resident.
    { maxIdleTime: "10 seconds" }
  )
})).pipe(Layer.provide(Layer.mergeAll(ProfileStore.layer, Budget.layer)))

export const TrackLive = Monitors.layer.pipe(
  Layer.provideMerge(MonitorEntityLive),
  Layer.provideMerge(Supervisor.layer),
  Layer.provideMerge(MonitorStore.layer)
)
