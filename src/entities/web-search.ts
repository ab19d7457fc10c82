/**
 * The WebSearch entity's definition (Effect Cluster), one per run: a persisted `Execute` and an
 * `Interrupt`. Its behaviour, the search executor, is src/search/executor.ts.
 */
import { ClusterSchema, Entity } from "effect/cluster"
import { Rpc } from "effect/rpc"
import { RunId } from "../domain/run.ts"

export const Execute = Rpc.make("Execute", { payload: { runId: RunId } })
  .annotate(ClusterSchema.Persisted, true)

/** Stops the run's search here at once (after a cancel). */
export const Interrupt = Rpc.make("Interrupt", { payload: { runId: RunId } })

export const WebSearchEntity = Entity.make("WebSearch", [Execute, Interrupt])
