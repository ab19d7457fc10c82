/**
 * Everything DoAnything adds to a runner: the Sessions service (service.ts), its schedules
 * (schedules.ts), the Session entity bound to its executor (executor.ts), and the Profiles service
 * with the Profile entity it sends to. What they stand on (the run kernel's stores, the cluster,
 * the browser pool, the shared capabilities) is provided below it, in src/server.ts.
 */
import { Layer } from "effect"
import { ProfileEntityLive } from "../entities/profile.ts"
import { SessionEntityLive } from "./executor.ts"
import { Profiles } from "./profiles.ts"
import { SessionSchedules } from "./schedules.ts"
import { Sessions } from "./service.ts"

// Profiles asks Sessions; Sessions asks SessionSchedules; the entities are bound before the
// services that send to them.
export const DoAnythingLive = Profiles.layer.pipe(
  Layer.provideMerge(Sessions.layer),
  Layer.provideMerge(SessionSchedules.layer),
  Layer.provideMerge(Layer.merge(SessionEntityLive, ProfileEntityLive))
)
