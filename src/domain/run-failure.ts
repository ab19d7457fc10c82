/**
 * How the work of a run says it cannot go on: the run kernel (src/runs/kernel.ts) ends the run
 * `failed` with this code and detail, once. Here, below the layers that do a run's work (the
 * agent loop, the products), so each can fail with it.
 */
import { Data } from "effect"

/** The run cannot go on; it ends `failed` with this code and detail. */
export class RunFailure extends Data.TaggedError("RunFailure")<{ readonly code: string; readonly detail: string }> {}
