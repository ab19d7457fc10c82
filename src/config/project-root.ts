/**
 * The project's directory (package.json, config/, console/), found from where this module runs:
 * the sources (src/config/) or the bundle `npm start` runs (dist/server/, build/server.ts), which
 * sit at different depths.
 */
import { existsSync } from "node:fs"
import * as path from "node:path"

const find = (from: string): string => {
  for (let dir = from; ; dir = path.dirname(dir)) {
    if (existsSync(path.join(dir, "package.json"))) return dir
    if (path.dirname(dir) === dir) throw new Error(`no package.json above ${from}`)
  }
}

export const projectRoot: string = find(import.meta.dirname)
