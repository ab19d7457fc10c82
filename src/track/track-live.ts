/** Everything Track adds to a runner: the Monitors service, the Monitor entity and what they use. */
import { Effect, Layer } from "effect"
import { MonitorEntity } from "../entities/monitor.ts"
import { MonitorStore } from "./monitor-store.ts"
import { Monitors } from "./monitors.ts"
import { Supervisor } from "./supervisor.ts"
import { TickExecutor } from "./tick.ts"

/** The Monitor entity's behaviour: ticks go to the tick executor, alignment turns to the supervisor. */
const MonitorEntityLive = MonitorEntity.toLayer(
  Effect.gen(function*() {
    const ticks = yield* TickExecutor
    const supervisor = yield* Supervisor
    return MonitorEntity.of({
      Tick: ({ payload }) => ticks.execute(payload.tickId),
      Fire: ({ payload }) => ticks.fire(payload.monitorId, new Date(payload.slot)),
      Align: ({ payload }) => supervisor.step(payload.monitorId, payload.turn)
    })
  }),
  // Monitors tick every minute or less often: an idle entity is let go between ticks, so thousands
  // of monitors do not all stay resident.
  { maxIdleTime: "10 seconds" }
)

export const TrackLive = Monitors.layer.pipe(
  Layer.provideMerge(MonitorEntityLive),
  Layer.provideMerge(Layer.mergeAll(TickExecutor.layer, Supervisor.layer)),
  Layer.provideMerge(MonitorStore.layer)
)
