/** Everything Track adds to a runner: the Monitors service, the Monitor entity and what they use. */
import { Layer } from "effect"
import { MonitorEntityLive } from "../entities/monitor.ts"
import { MonitorStore } from "./monitor-store.ts"
import { Monitors } from "./monitors.ts"
import { Supervisor } from "./supervisor.ts"
import { TickExecutor } from "./tick.ts"

export const TrackLive = Monitors.layer.pipe(
  Layer.provideMerge(MonitorEntityLive),
  Layer.provideMerge(Layer.mergeAll(TickExecutor.layer, Supervisor.layer)),
  Layer.provideMerge(MonitorStore.layer)
)
