/**
 * Everything DeepResearch adds to a runner: the Research service (service.ts) and the Research
 * entity bound to its executor (executor.ts). What they stand on is provided below it, in
 * src/server.ts.
 */
import { Layer } from "effect"
import { ResearchEntityLive } from "./executor.ts"
import { Research } from "./service.ts"

export const ResearchLive = Research.layer.pipe(Layer.provideMerge(ResearchEntityLive))
