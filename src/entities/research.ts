/**
 * The DeepResearch entity's definition (Effect Cluster), one per run: a persisted `Execute` and an
 * `Interrupt`. Its behaviour, the research executor, is src/research/executor.ts.
 */
import { ClusterSchema, Entity } from "effect/cluster"
import { Rpc } from "effect/rpc"
import { RunId } from "../domain/run.ts"

export const Execute = Rpc.make("Execute", { payload: { runId: RunId } })
  .annotate(ClusterSchema.Persisted, true)
/** Stops the run's execution here at once (after a cancel). */
export const Interrupt = Rpc.make("Interrupt", { payload: { runId: RunId } })

export const ResearchEntity = Entity.make("DeepResearch", [Execute, Interrupt])
