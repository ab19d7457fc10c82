/**
 * Everything WebSearch adds to a runner: the Search service (service.ts) and the WebSearch entity
 * bound to its executor (executor.ts). What they stand on is provided below it, in src/server.ts.
 */
import { Layer } from "effect"
import { WebSearchEntityLive } from "./executor.ts"
import { Search } from "./service.ts"

export const SearchLive = Search.layer.pipe(Layer.provideMerge(WebSearchEntityLive))
