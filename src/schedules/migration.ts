/** Tables of src/schedules (owned by that module). */
import { Effect } from "effect"

export const m0010_schedules = Effect.void
