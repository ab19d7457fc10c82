/** Newest modification time of the files under the given paths (files or folders): what a build's staleness check compares its output's time with. */
import { readdirSync, statSync } from "node:fs"
import * as path from "node:path"

export const newestModification = (root: string, names: ReadonlyArray<string>): number => {
  let newest = 0
  const visit = (entry: string) => {
    const info = statSync(entry)
    if (info.isDirectory()) for (const name of readdirSync(entry)) visit(path.join(entry, name))
    else newest = Math.max(newest, info.mtimeMs)
  }
  for (const name of names) visit(path.join(root, name))
  return newest
}
