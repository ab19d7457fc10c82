/**
 * The order test files start in. Vitest starts the files it has timings for longest first, but a
 * clean clone (CI) has none, and it then starts larger files first: the corpus-wide observation
 * test, short to read and the longest to run (about 100 s), started last and the other worker sat
 * idle for most of it. The files below, the longest of a clean-clone run, start first in this
 * order; every other file keeps vitest's order after them, and files stay grouped by project.
 */
import { BaseSequencer, type TestSpecification } from "vitest/node"

const LONGEST = [
  "test/browser/observation-size.test.ts",
  "test/scale-out/cluster.test.ts",
  "test/eval/eval.test.ts",
  "test/do-anything/take-control.test.ts",
  "test/clients/sdk.test.ts",
  "test/clients/cli-mcp.test.ts",
  "test/security/fuzz.test.ts",
  "test/web-search/fair-sharing-per-key.test.ts",
  "test/security/request-limits.test.ts",
  "test/track/restart.test.ts",
  "test/web-search/fair-sharing.test.ts",
  "test/profiles/profiles.test.ts"
]

const rankOf = (spec: TestSpecification) => {
  const index = LONGEST.findIndex((file) => spec.moduleId.endsWith(file))
  return index < 0 ? LONGEST.length : index
}

export class LongestFirst extends BaseSequencer {
  override async sort(files: Array<TestSpecification>): Promise<Array<TestSpecification>> {
    const sorted = await super.sort(files)
    const position = new Map(sorted.map((spec, i) => [spec, i]))
    return [...sorted].sort((a, b) =>
      a.project.name !== b.project.name
        ? position.get(a)! - position.get(b)!
        : rankOf(a) - rankOf(b) || position.get(a)! - position.get(b)!
    )
  }
}
