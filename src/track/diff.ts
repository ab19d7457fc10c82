/**
 * Diffs between two snapshots of a monitor: a structural diff of the extracted JSON (added,
 * removed and changed JSON pointers with old and new values) and a unified line diff of the text.
 */

// ---------------------------------------------------------------------------------------------
// JSON
// ---------------------------------------------------------------------------------------------

export interface JsonChange {
  readonly op: "added" | "removed" | "changed"
  /** An RFC 6901 JSON pointer: "/items/0/price", "" for the root. */
  readonly path: string
  readonly old?: unknown
  readonly new?: unknown
}

/** One segment of an RFC 6901 pointer (`~` → `~0`, `/` → `~1`). */
export const escapePointerSegment = (segment: string | number): string =>
  String(segment).replace(/~/g, "~0").replace(/\//g, "~1")

type Kind = "array" | "object" | "scalar"
const kindOf = (value: unknown): Kind =>
  Array.isArray(value) ? "array" : value !== null && typeof value === "object" ? "object" : "scalar"

const sameScalar = (a: unknown, b: unknown): boolean =>
  a === b || (typeof a === "number" && typeof b === "number" && Number.isNaN(a) && Number.isNaN(b))

/** Keys whose value is `undefined` are absent, as they would be after a JSON round trip. */
const presentKeys = (value: object): Array<string> =>
  Object.keys(value).filter((key) => (value as Record<string, unknown>)[key] !== undefined).sort()

/** Deep equality of JSON values (object key order does not matter). */
export const jsonEqual = (a: unknown, b: unknown): boolean => {
  const kind = kindOf(a)
  if (kind !== kindOf(b)) return false
  if (kind === "scalar") return sameScalar(a, b)
  if (kind === "array") {
    const x = a as ReadonlyArray<unknown>
    const y = b as ReadonlyArray<unknown>
    return x.length === y.length && x.every((item, i) => jsonEqual(item, y[i]))
  }
  const x = a as Record<string, unknown>
  const y = b as Record<string, unknown>
  const keys = presentKeys(x)
  const otherKeys = presentKeys(y)
  return keys.length === otherKeys.length && keys.every((key, i) => key === otherKeys[i] && jsonEqual(x[key], y[key]))
}

/**
 * The structural diff of two JSON values: objects are compared key by key (keys sorted, so the
 * result is deterministic), arrays index by index (an inserted element shows as changes to the
 * following indices plus one `added` at the end), and a value whose kind changes (object, array
 * or scalar) is one `changed` at its path. Deep-equal inputs give an empty list.
 */
export const diffJson = (before: unknown, after: unknown): ReadonlyArray<JsonChange> => {
  const changes: Array<JsonChange> = []
  const walk = (a: unknown, b: unknown, path: string): void => {
    const kind = kindOf(a)
    if (kind !== kindOf(b) || kind === "scalar") {
      if (!jsonEqual(a, b)) changes.push({ op: "changed", path, old: a, new: b })
      return
    }
    if (kind === "array") {
      const x = a as ReadonlyArray<unknown>
      const y = b as ReadonlyArray<unknown>
      const common = Math.min(x.length, y.length)
      for (let i = 0; i < common; i++) walk(x[i], y[i], `${path}/${i}`)
      for (let i = common; i < x.length; i++) changes.push({ op: "removed", path: `${path}/${i}`, old: x[i] })
      for (let i = common; i < y.length; i++) changes.push({ op: "added", path: `${path}/${i}`, new: y[i] })
      return
    }
    const x = a as Record<string, unknown>
    const y = b as Record<string, unknown>
    const keys = [...new Set([...presentKeys(x), ...presentKeys(y)])].sort()
    for (const key of keys) {
      const child = `${path}/${escapePointerSegment(key)}`
      if (x[key] === undefined) changes.push({ op: "added", path: child, new: y[key] })
      else if (y[key] === undefined) changes.push({ op: "removed", path: child, old: x[key] })
      else walk(x[key], y[key], child)
    }
  }
  walk(before, after, "")
  return changes
}

// ---------------------------------------------------------------------------------------------
// Text
// ---------------------------------------------------------------------------------------------

/** Lines of a text; `\r\n`, `\r` and `\n` all end a line, and a final line break adds no empty line. */
const splitLines = (text: string): Array<string> => {
  if (text === "") return []
  const lines = text.split(/\r\n|\r|\n/)
  if (lines[lines.length - 1] === "") lines.pop()
  return lines
}

/** One line of an edit script: kept (`=`), removed from `before` (`-`) or added from `after` (`+`). */
interface Edit {
  readonly op: "=" | "-" | "+"
  readonly line: string
  /** 0-based line numbers in `before` / `after` (the position it would have for `+` / `-`). */
  readonly a: number
  readonly b: number
}

/**
 * Work bound of the middle part (after the common prefix and suffix are trimmed): Myers' search
 * costs O((N + M) · D) for D differing lines. When D would exceed what fits in about this many
 * steps, the middle is reported as all of `before` removed and all of `after` added: still a
 * correct diff, only not the shortest one. Typical page edits (a few changed lines among
 * thousands) stay well inside the bound.
 */
const WORK_BOUND = 20_000_000
const MAX_EDITS = 2_000

/**
 * The shortest edit script between `a` and `b` (Myers' O(ND) greedy algorithm, lines interned
 * to integers), or undefined if it needs more than `maxD` insertions plus deletions.
 */
const myers = (a: ReadonlyArray<number>, b: ReadonlyArray<number>, maxD: number): Array<"=" | "-" | "+"> | undefined => {
  const n = a.length
  const m = b.length
  const offset = n + m + 1
  const v = new Int32Array(2 * offset + 1)
  // trace[d] holds v[-d-1 .. d+1] as it was before step d; enough to walk back.
  const trace: Array<Int32Array> = []
  for (let d = 0; d <= Math.min(n + m, maxD); d++) {
    trace.push(v.slice(offset - d - 1, offset + d + 2))
    for (let k = -d; k <= d; k += 2) {
      let x = k === -d || (k !== d && v[offset + k - 1]! < v[offset + k + 1]!) ? v[offset + k + 1]! : v[offset + k - 1]! + 1
      let y = x - k
      while (x < n && y < m && a[x] === b[y]) {
        x++
        y++
      }
      v[offset + k] = x
      if (x >= n && y >= m) return backtrack(trace, n, m)
    }
  }
  return undefined
}

const backtrack = (trace: ReadonlyArray<Int32Array>, n: number, m: number): Array<"=" | "-" | "+"> => {
  const script: Array<"=" | "-" | "+"> = []
  let x = n
  let y = m
  for (let d = trace.length - 1; d >= 0; d--) {
    const v = trace[d]!
    const at = (k: number) => v[k + d + 1]!
    const k = x - y
    const prevK = d === 0 ? 0 : k === -d || (k !== d && at(k - 1) < at(k + 1)) ? k + 1 : k - 1
    const prevX = d === 0 ? 0 : at(prevK)
    const prevY = prevX - prevK
    while (x > prevX && y > prevY) {
      script.push("=")
      x--
      y--
    }
    if (d > 0) script.push(x === prevX ? "+" : "-")
    x = prevX
    y = prevY
  }
  return script.reverse()
}

/** The edit script of two line lists: common prefix and suffix trimmed, Myers on the rest within the work bound. */
const editScript = (before: ReadonlyArray<string>, after: ReadonlyArray<string>): Array<Edit> => {
  let start = 0
  while (start < before.length && start < after.length && before[start] === after[start]) start++
  let endA = before.length
  let endB = after.length
  while (endA > start && endB > start && before[endA - 1] === after[endB - 1]) {
    endA--
    endB--
  }
  const ids = new Map<string, number>()
  const intern = (line: string) => {
    let id = ids.get(line)
    if (id === undefined) ids.set(line, id = ids.size)
    return id
  }
  const midA = before.slice(start, endA).map(intern)
  const midB = after.slice(start, endB).map(intern)
  const maxD = Math.min(MAX_EDITS, Math.floor(WORK_BOUND / Math.max(1, midA.length + midB.length)))
  const middle = myers(midA, midB, maxD) ??
    [...midA.map(() => "-" as const), ...midB.map(() => "+" as const)]

  const edits: Array<Edit> = []
  let a = 0
  let b = 0
  const push = (op: Edit["op"]) => {
    edits.push({ op, line: op === "+" ? after[b]! : before[a]!, a, b })
    if (op !== "+") a++
    if (op !== "-") b++
  }
  for (let i = 0; i < start; i++) push("=")
  for (const op of middle) push(op)
  while (a < before.length) push("=")
  return edits
}

export interface TextDiffOptions {
  /** Unchanged lines shown around each change (default 3). */
  readonly context?: number | undefined
  /** The `---` label (default "a"). */
  readonly fromLabel?: string | undefined
  /** The `+++` label (default "b"). */
  readonly toLabel?: string | undefined
}

/** `start,count` of a hunk side; an empty side names the line before it, as diff -u does. */
const range = (first: number, count: number): string => `${count === 0 ? first : first + 1},${count}`

/**
 * A unified diff of two texts by lines (`--- a`, `+++ b`, `@@ -l,n +l,n @@` hunks with `context`
 * lines around each change; hunks closer than twice the context merge). "" when the texts have
 * the same lines. Line endings do not count: `\r\n`, `\r` and `\n` are all a line break, and a
 * missing final line break is not a difference. The line counts in a hunk header are always
 * written, also when they are 1.
 */
export const diffText = (before: string, after: string, options?: TextDiffOptions): string => {
  const edits = editScript(splitLines(before), splitLines(after))
  const changed = edits.flatMap((edit, i) => edit.op === "=" ? [] : [i])
  if (changed.length === 0) return ""
  const context = Math.max(0, Math.floor(options?.context ?? 3))
  const out = [`--- ${options?.fromLabel ?? "a"}`, `+++ ${options?.toLabel ?? "b"}`]
  let g = 0
  while (g < changed.length) {
    // Grow the hunk while the next change is within 2 × context unchanged lines of the last one.
    let last = g
    while (last + 1 < changed.length && changed[last + 1]! - changed[last]! - 1 <= 2 * context) last++
    const from = Math.max(0, changed[g]! - context)
    const to = Math.min(edits.length - 1, changed[last]! + context)
    const hunk = edits.slice(from, to + 1)
    const countA = hunk.filter((edit) => edit.op !== "+").length
    const countB = hunk.filter((edit) => edit.op !== "-").length
    out.push(`@@ -${range(hunk[0]!.a, countA)} +${range(hunk[0]!.b, countB)} @@`)
    for (const edit of hunk) out.push(`${edit.op === "=" ? " " : edit.op}${edit.line}`)
    g = last + 1
  }
  return out.join("\n") + "\n"
}

/** How many lines `after` adds to and removes from `before` (the `+` and `-` lines of {@link diffText}). */
export const textChangeSummary = (before: string, after: string): { added: number; removed: number } => {
  let added = 0
  let removed = 0
  for (const edit of editScript(splitLines(before), splitLines(after))) {
    if (edit.op === "+") added++
    else if (edit.op === "-") removed++
  }
  return { added, removed }
}
