import { describe, expect, it } from "vitest"
import { diffJson, diffText, escapePointerSegment, jsonEqual, textChangeSummary } from "../../src/track/diff.ts"

const lines = (count: number, make: (i: number) => string = (i) => `line ${i + 1}`) =>
  Array.from({ length: count }, (_, i) => make(i)).join("\n") + "\n"

/** Applies a unified diff produced by diffText to `before`, to check the hunks are self-consistent. */
const applyPatch = (before: string, patch: string): string => {
  const source = before === "" ? [] : before.replace(/\n$/, "").split("\n")
  const out: Array<string> = []
  let cursor = 0
  const patchLines = patch.replace(/\n$/, "").split("\n").slice(2)
  for (let i = 0; i < patchLines.length; i++) {
    const header = /^@@ -(\d+),(\d+) \+(\d+),(\d+) @@$/.exec(patchLines[i]!)
    if (header === null) throw new Error(`expected a hunk header, got ${patchLines[i]}`)
    const start = Number(header[2]) === 0 ? Number(header[1]) : Number(header[1]) - 1
    while (cursor < start) out.push(source[cursor++]!)
    i++
    while (i < patchLines.length && !patchLines[i]!.startsWith("@@")) {
      const line = patchLines[i]!
      const body = line.slice(1)
      if (line[0] === " ") {
        expect(source[cursor]).toBe(body)
        out.push(body)
        cursor++
      } else if (line[0] === "-") {
        expect(source[cursor]).toBe(body)
        cursor++
      } else if (line[0] === "+") {
        out.push(body)
      } else {
        throw new Error(`bad patch line ${line}`)
      }
      i++
    }
    i--
  }
  while (cursor < source.length) out.push(source[cursor++]!)
  return out.length === 0 ? "" : out.join("\n") + "\n"
}

describe("diffJson", () => {
  it("is empty for deep-equal values, whatever the key order", () => {
    expect(diffJson({ a: 1, b: { c: [1, 2, { d: null }] } }, { b: { c: [1, 2, { d: null }] }, a: 1 })).toEqual([])
    expect(diffJson(null, null)).toEqual([])
    expect(diffJson("x", "x")).toEqual([])
    expect(diffJson([], [])).toEqual([])
  })
  it("reports a changed root scalar at the empty pointer", () => {
    expect(diffJson(1, 2)).toEqual([{ op: "changed", path: "", old: 1, new: 2 }])
  })
  it("reports added, removed and changed keys of nested objects, keys sorted", () => {
    const before = { product: { price: 100, name: "Lamp", stock: 3 }, z: 1 }
    const after = { product: { price: 90, name: "Lamp", color: "red" }, a: true, z: 1 }
    expect(diffJson(before, after)).toEqual([
      { op: "added", path: "/a", new: true },
      { op: "added", path: "/product/color", new: "red" },
      { op: "changed", path: "/product/price", old: 100, new: 90 },
      { op: "removed", path: "/product/stock", old: 3 }
    ])
  })
  it("compares arrays by index: changed elements, then removed or added tail elements", () => {
    expect(diffJson({ items: [{ price: 1 }, { price: 2 }] }, { items: [{ price: 1 }, { price: 5 }, { price: 7 }] })).toEqual([
      { op: "changed", path: "/items/1/price", old: 2, new: 5 },
      { op: "added", path: "/items/2", new: { price: 7 } }
    ])
    expect(diffJson([1, 2, 3], [1])).toEqual([
      { op: "removed", path: "/1", old: 2 },
      { op: "removed", path: "/2", old: 3 }
    ])
  })
  it("reports a change of kind as one changed at that path", () => {
    expect(diffJson({ a: { b: 1 } }, { a: [1] })).toEqual([{ op: "changed", path: "/a", old: { b: 1 }, new: [1] }])
    expect(diffJson({ a: [1] }, { a: "1" })).toEqual([{ op: "changed", path: "/a", old: [1], new: "1" }])
    expect(diffJson({ a: null }, { a: { b: 1 } })).toEqual([{ op: "changed", path: "/a", old: null, new: { b: 1 } }])
    expect(diffJson({ a: 1 }, { a: "1" })).toEqual([{ op: "changed", path: "/a", old: 1, new: "1" }])
    expect(diffJson({ a: 1 }, [1])).toEqual([{ op: "changed", path: "", old: { a: 1 }, new: [1] }])
  })
  it("treats null as a value and undefined as absence", () => {
    expect(diffJson({ a: null }, {})).toEqual([{ op: "removed", path: "/a", old: null }])
    expect(diffJson({ a: undefined }, {})).toEqual([])
    expect(diffJson({}, { a: undefined, b: 0 })).toEqual([{ op: "added", path: "/b", new: 0 }])
  })
  it("escapes ~ and / in pointer segments (RFC 6901)", () => {
    expect(diffJson({ "a/b": 1, "m~n": 1 }, { "a/b": 2, "m~n": 2 })).toEqual([
      { op: "changed", path: "/a~1b", old: 1, new: 2 },
      { op: "changed", path: "/m~0n", old: 1, new: 2 }
    ])
    expect(escapePointerSegment("~/")).toBe("~0~1")
    expect(diffJson({ "": 1 }, { "": 2 })).toEqual([{ op: "changed", path: "/", old: 1, new: 2 }])
  })
  it("jsonEqual ignores key order and distinguishes kinds", () => {
    expect(jsonEqual({ a: 1, b: [1, { c: 2 }] }, { b: [1, { c: 2 }], a: 1 })).toBe(true)
    expect(jsonEqual([1, 2], [2, 1])).toBe(false)
    expect(jsonEqual({}, [])).toBe(false)
    expect(jsonEqual(null, {})).toBe(false)
    expect(jsonEqual(1, "1")).toBe(false)
  })
})

describe("diffText", () => {
  it("is empty for equal texts", () => {
    expect(diffText("", "")).toBe("")
    expect(diffText("a\nb\n", "a\nb\n")).toBe("")
  })
  it("ignores line-ending style and a missing final newline (CRLF vs LF)", () => {
    expect(diffText("a\r\nb\r\n", "a\nb")).toBe("")
    expect(diffText("a\rb", "a\nb\n")).toBe("")
  })
  it("treats CRLF input as lines when there is a change", () => {
    expect(diffText("a\r\nb\r\nc\r\n", "a\r\nB\r\nc\r\n")).toBe("--- a\n+++ b\n@@ -1,3 +1,3 @@\n a\n-b\n+B\n c\n")
  })
  it("writes headers, labels and one hunk with three lines of context by default", () => {
    const before = lines(10)
    const after = before.replace("line 5\n", "line five\n")
    expect(diffText(before, after, { fromLabel: "snapshot 1", toLabel: "snapshot 2" })).toBe([
      "--- snapshot 1",
      "+++ snapshot 2",
      "@@ -2,7 +2,7 @@",
      " line 2",
      " line 3",
      " line 4",
      "-line 5",
      "+line five",
      " line 6",
      " line 7",
      " line 8",
      ""
    ].join("\n"))
  })
  it("honours the context option, 0 included", () => {
    const before = lines(10)
    const after = before.replace("line 5\n", "line five\n")
    expect(diffText(before, after, { context: 1 })).toBe("--- a\n+++ b\n@@ -4,3 +4,3 @@\n line 4\n-line 5\n+line five\n line 6\n")
    expect(diffText(before, after, { context: 0 })).toBe("--- a\n+++ b\n@@ -5,1 +5,1 @@\n-line 5\n+line five\n")
  })
  it("splits distant changes into separate hunks and merges close ones", () => {
    const before = lines(30)
    const far = before.replace("line 3\n", "line three\n").replace("line 25\n", "line twenty-five\n")
    const farDiff = diffText(before, far)
    expect(farDiff.match(/^@@/gm)).toHaveLength(2)
    expect(farDiff).toContain("@@ -1,6 +1,6 @@")
    expect(farDiff).toContain("@@ -22,7 +22,7 @@")
    // Six unchanged lines between two changes: exactly 2 × context, so one hunk.
    const close = before.replace("line 10\n", "line ten\n").replace("line 17\n", "line seventeen\n")
    const closeDiff = diffText(before, close)
    expect(closeDiff.match(/^@@/gm)).toHaveLength(1)
    expect(closeDiff).toContain("@@ -7,14 +7,14 @@")
    // Seven unchanged lines: two hunks.
    const apart = before.replace("line 10\n", "line ten\n").replace("line 18\n", "line eighteen\n")
    expect(diffText(before, apart).match(/^@@/gm)).toHaveLength(2)
  })
  it("writes pure insertions and deletions with an empty side as diff -u does", () => {
    expect(diffText("", "x\ny\n")).toBe("--- a\n+++ b\n@@ -0,0 +1,2 @@\n+x\n+y\n")
    expect(diffText("x\ny\n", "")).toBe("--- a\n+++ b\n@@ -1,2 +0,0 @@\n-x\n-y\n")
    expect(diffText("a\nb\n", "a\nb\nc\n", { context: 0 })).toBe("--- a\n+++ b\n@@ -2,0 +3,1 @@\n+c\n")
  })
  it("finds a minimal diff for moved and interleaved lines", () => {
    const before = "a\nb\nc\nd\ne\n"
    const after = "b\nc\nx\nd\ne\na\n"
    expect(textChangeSummary(before, after)).toEqual({ added: 2, removed: 1 })
    expect(applyPatch(before, diffText(before, after))).toBe(after)
  })
  it("produces hunks that apply back to the new text", () => {
    const before = lines(200, (i) => `row ${i % 17} ${i}`)
    const after = lines(210, (i) => (i % 23 === 0 ? `new ${i}` : `row ${i % 17} ${i}`))
    const patch = diffText(before, after)
    expect(patch).not.toBe("")
    expect(applyPatch(before, patch)).toBe(after)
  })
  it("stays bounded on large, completely different inputs and is still a correct diff", () => {
    const before = lines(20_000, (i) => `old ${i}`)
    const after = lines(20_000, (i) => `new ${i}`)
    expect(textChangeSummary(before, after)).toEqual({ added: 20_000, removed: 20_000 })
    const patch = diffText(before, after, { context: 0 })
    expect(patch.split("\n")[2]).toBe("@@ -1,20000 +1,20000 @@")
  })
  it("keeps a small edit in a large file small (common prefix and suffix trimmed first)", () => {
    const before = lines(50_000)
    const after = before.replace("line 25000\n", "line 25000 changed\n")
    expect(textChangeSummary(before, after)).toEqual({ added: 1, removed: 1 })
    expect(diffText(before, after)).toContain("@@ -24997,7 +24997,7 @@")
  })
})

describe("textChangeSummary", () => {
  it("counts added and removed lines", () => {
    expect(textChangeSummary("a\nb\nc\n", "a\nc\nd\ne\n")).toEqual({ added: 2, removed: 1 })
    expect(textChangeSummary("same", "same")).toEqual({ added: 0, removed: 0 })
    expect(textChangeSummary("", "x")).toEqual({ added: 1, removed: 0 })
  })
})
