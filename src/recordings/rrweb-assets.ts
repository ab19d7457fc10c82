/**
 * The rrweb files the service uses, read from the installed npm package `rrweb` (its prebuilt UMD
 * bundle holds both the recorder and the replayer): injected into recorded pages, and served to
 * replay pages. Nothing is fetched from a CDN.
 */
import { readFileSync } from "node:fs"
import { createRequire } from "node:module"
import * as path from "node:path"

/** The package's dist directory (its `exports` map hides the files, so resolve the main entry). */
const distDir = (): string => path.dirname(createRequire(import.meta.url).resolve("rrweb"))

let cached: { readonly script: string; readonly css: string } | undefined

/** The UMD bundle (without its source-map comment) and the replayer's stylesheet. */
export const rrwebAssets = (): { readonly script: string; readonly css: string } => {
  if (cached !== undefined) return cached
  const dir = distDir()
  const script = readFileSync(path.join(dir, "rrweb.umd.min.cjs"), "utf8").replace(/\n\/\/# sourceMappingURL=\S*\s*$/, "\n")
  const css = readFileSync(path.join(dir, "style.min.css"), "utf8").replace(/\/\*# sourceMappingURL=\S*\s*\*\/\s*$/, "")
  cached = { script, css }
  return cached
}
