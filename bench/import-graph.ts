/**
 * The shape of src/'s import graph, for the house plan's figures: the folders in the largest
 * strongly connected component (folders that all reach each other through imports), the imports
 * that run upward against the layering (.dependency-cruiser.cjs ranks), the file-level cycles,
 * and the layering check's violations with and without the baseline.
 *
 *   npx node bench/import-graph.ts
 */
import { execFileSync } from "node:child_process"
import { createRequire } from "node:module"

interface Module {
  readonly source: string
  readonly dependencies: ReadonlyArray<{ readonly resolved: string; readonly circular: boolean; readonly coreModule: boolean }>
}

const require = createRequire(import.meta.url)
const config = require("../.dependency-cruiser.cjs") as {
  forbidden: ReadonlyArray<{ name: string }>
}
// The ranks are not exported by the config; the upward rules name them, one rule a folder.
const upwardRules = new Set(config.forbidden.filter((rule) => rule.name.startsWith("upward-from-")).map((rule) => rule.name))

const cruise = (extra: ReadonlyArray<string> = []) =>
  JSON.parse(execFileSync("npx", ["depcruise", "src", "--config", ".dependency-cruiser.cjs", "--output-type", "json", ...extra], {
    encoding: "utf8",
    maxBuffer: 256 * 1024 * 1024
  })) as {
    modules: ReadonlyArray<Module>
    summary: { violations: ReadonlyArray<{ rule: { name: string } }>; error: number; warn: number }
  }

const full = cruise()
// Sub-folders with a rank of their own (billing/store, at the store's rank) are folders of the graph.
const rankedSubFolders = [...upwardRules].map((name) => name.slice("upward-from-".length)).filter((folder) => folder.includes("/"))
const folderOf = (file: string) => {
  const inside = rankedSubFolders.find((folder) => file.startsWith(`src/${folder}/`))
  if (inside !== undefined) return inside
  const parts = file.split("/")
  return parts.length > 2 ? parts[1]! : parts[1]!.replace(/\.ts$/, "")
}

// Folder graph and Tarjan's strongly connected components.
const edges = new Map<string, Set<string>>()
for (const module of full.modules) {
  if (!module.source.startsWith("src/")) continue
  const from = folderOf(module.source)
  if (!edges.has(from)) edges.set(from, new Set())
  for (const dependency of module.dependencies) {
    if (dependency.coreModule || !dependency.resolved.startsWith("src/")) continue
    const to = folderOf(dependency.resolved)
    if (to !== from) edges.get(from)!.add(to)
  }
}
let counter = 0
const index = new Map<string, number>()
const low = new Map<string, number>()
const stack: Array<string> = []
const onStack = new Set<string>()
const components: Array<Array<string>> = []
const visit = (node: string) => {
  index.set(node, counter)
  low.set(node, counter)
  counter++
  stack.push(node)
  onStack.add(node)
  for (const next of edges.get(node) ?? []) {
    if (!index.has(next)) {
      visit(next)
      low.set(node, Math.min(low.get(node)!, low.get(next)!))
    } else if (onStack.has(next)) {
      low.set(node, Math.min(low.get(node)!, index.get(next)!))
    }
  }
  if (low.get(node) === index.get(node)) {
    const component: Array<string> = []
    let member: string
    do {
      member = stack.pop()!
      onStack.delete(member)
      component.push(member)
    } while (member !== node)
    components.push(component)
  }
}
for (const node of edges.keys()) if (!index.has(node)) visit(node)
const largest = components.sort((a, b) => b.length - a.length)[0] ?? []

const violations = full.summary.violations
const byRule = new Map<string, number>()
for (const violation of violations) byRule.set(violation.rule.name, (byRule.get(violation.rule.name) ?? 0) + 1)
const upwardImports = violations.filter((violation) => upwardRules.has(violation.rule.name)).length
const fileCycles = byRule.get("no-circular") ?? 0

console.log(`folders of src/: ${edges.size}`)
console.log(`largest strongly connected component: ${largest.length} folders (${largest.sort().join(", ")})`)
console.log(`upward imports (against the layer ranks): ${upwardImports}`)
console.log(`file import cycles: ${fileCycles}`)
console.log(`layering violations: ${violations.length}`)
for (const [rule, count] of [...byRule].sort((a, b) => b[1] - a[1])) console.log(`  ${rule}: ${count}`)
