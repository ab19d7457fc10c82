/**
 * Evaluation of Track's trigger and stop-condition rules after every successful tick. The language
 * itself (the rule shapes, parsing, the request-body schemas) is part of the model:
 * src/domain/track-rules.ts.
 */
import { jsonEqual } from "./diff.ts"
import { normalizeText } from "./fingerprint.ts"
import { type ComparisonOp, fieldSegments, isPlainObject, parseRfc3339, type Rule } from "../domain/track-rules.ts"

// ---------------------------------------------------------------------------------------------
// Evaluation
// ---------------------------------------------------------------------------------------------

export interface TickFacts {
  /** No previous successful snapshot. */
  readonly first: boolean
  /** Content differs from the previous snapshot. */
  readonly changed: boolean
  /** This tick's extracted JSON (null without extraction). */
  readonly extracted: unknown | null
  readonly previousExtracted: unknown | null
  /** This tick's normalized text. */
  readonly text: string
  /** 1-based count of ticks so far including this one. */
  readonly tickN: number
  readonly now: Date
}

const MISSING: unique symbol = Symbol("missing")

/** The value at a field path, or MISSING. Only own keys of objects and in-range indices of arrays. */
export const getField = (root: unknown, field: string): unknown => {
  const segments = fieldSegments(field)
  if (segments === undefined) return MISSING
  let current: unknown = root
  for (const segment of segments) {
    if (Array.isArray(current)) {
      if (!/^(0|[1-9]\d*)$/.test(segment)) return MISSING
      const index = Number(segment)
      if (index >= current.length) return MISSING
      current = current[index]
    } else if (isPlainObject(current) && Object.hasOwn(current, segment) && current[segment] !== undefined) {
      current = current[segment]
    } else {
      return MISSING
    }
  }
  return current
}

const JS_NUMBER = /^[+-]?(?:\d+\.?\d*|\.\d+)(?:e[+-]?\d+)?$/i
const NUMBER_TEXT = /^(\D*?)([.,]?\d(?:[\d.,'\u0020\u00A0\u202F\u2009]*\d)?)(\D*)$/u

/**
 * The number a JSON value stands for: a finite number, or a string holding exactly one number
 * among other text ("$1,299.00" → 1299, "1.299,50 €" → 1299.5, "-12" → -12, "USD 5" → 5,
 * "Only 3 left" → 3). Undefined otherwise ("3 for $10", "2026-01-05", "v1.2.3", "free").
 */
export const toNumber = (value: unknown): number | undefined => {
  if (typeof value === "number") return Number.isFinite(value) ? value : undefined
  if (typeof value !== "string") return undefined
  const text = value.trim()
  if (JS_NUMBER.test(text)) return Number(text)
  const m = NUMBER_TEXT.exec(text)
  if (m === null) return undefined
  const [, prefix = "", digits = ""] = m
  // A minus right before the number or before its currency sign ("-12", "-$12", "− 12 €").
  const negative = /[-\u2212][^\p{L}]*$/u.test(prefix)
  let body = digits.replace(/['\u0020\u00A0\u202F\u2009]/gu, "")
  const lastComma = body.lastIndexOf(",")
  const lastDot = body.lastIndexOf(".")
  if (lastComma >= 0 && lastDot >= 0) {
    const decimal = lastComma > lastDot ? "," : "."
    const grouping = decimal === "," ? "." : ","
    body = body.split(grouping).join("")
    if (body.split(decimal).length > 2) return undefined
    body = body.replace(decimal, ".")
  } else if (lastComma >= 0) {
    const parts = body.split(",")
    body = parts.length > 2 || parts[1]!.length === 3 && parts[0] !== "" ? parts.join("") : parts.join(".")
  } else if (lastDot >= 0) {
    const parts = body.split(".")
    if (parts.length > 2) {
      if (parts.slice(1).some((part) => part.length !== 3)) return undefined
      body = parts.join("")
    }
  }
  const number = Number(body)
  return Number.isFinite(number) ? (negative ? -number : number) : undefined
}

const looseEqual = (a: unknown, b: unknown): boolean => {
  if (jsonEqual(a, b)) return true
  if (typeof a === "number" && typeof b === "string") return toNumber(b) === a
  if (typeof a === "string" && typeof b === "number") return toNumber(a) === b
  return false
}

const order = (left: unknown, right: unknown): number | undefined => {
  const x = toNumber(left)
  const y = toNumber(right)
  if (x !== undefined && y !== undefined) return x < y ? -1 : x > y ? 1 : 0
  if (typeof left === "string" && typeof right === "string") return left < right ? -1 : left > right ? 1 : 0
  return undefined
}

const compare = (left: unknown, op: ComparisonOp, right: unknown): boolean => {
  switch (op) {
    case "==":
      return looseEqual(left, right)
    case "!=":
      return !looseEqual(left, right)
    default: {
      const sign = order(left, right)
      if (sign === undefined) return false
      return op === "<" ? sign < 0 : op === "<=" ? sign <= 0 : op === ">" ? sign > 0 : sign >= 0
    }
  }
}

const textContains = (text: string, needle: string): boolean =>
  text.toLowerCase().includes(normalizeText(needle).toLowerCase())

/** Whether a parsed rule holds for this tick. Call it after successful ticks only. */
export const evaluate = (rule: Rule, facts: TickFacts): boolean => {
  if ("on" in rule) return rule.on === "always" || (!facts.first && facts.changed)
  if ("field" in rule) {
    if (facts.extracted === null) return false
    const current = getField(facts.extracted, rule.field)
    if (current === MISSING) return false
    if (rule.op === "changed") {
      if (facts.first || facts.previousExtracted === null) return false
      const previous = getField(facts.previousExtracted, rule.field)
      return previous === MISSING || !jsonEqual(previous, current)
    }
    return compare(current, rule.op, rule.value)
  }
  if ("contains" in rule) return textContains(facts.text, rule.contains)
  if ("not_contains" in rule) return !textContains(facts.text, rule.not_contains)
  if ("all" in rule) return rule.all.every((item) => evaluate(item, facts))
  if ("any" in rule) return rule.any.some((item) => evaluate(item, facts))
  if ("not" in rule) return !evaluate(rule.not, facts)
  if ("max_ticks" in rule) return facts.tickN >= rule.max_ticks
  const until = parseRfc3339(rule.until)
  return until !== undefined && facts.now.getTime() >= until
}
