/** The body of a run's terminal callback: the run as its product's GET shows it. */
import type { RunRow } from "../../store/runs.ts"
import { researchRunView } from "./research-view.ts"
import { runView } from "./run-view.ts"

export const callbackView = (run: RunRow): unknown => run.kind === "deep_research" ? researchRunView(run) : runView(run)
