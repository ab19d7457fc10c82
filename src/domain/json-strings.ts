/** JSON-like values whose string leaves (not keys) go through `f`: arrays and plain objects are rebuilt, other values kept. */
export const mapStrings = (value: unknown, f: (text: string) => string): unknown => {
  if (typeof value === "string") return f(value)
  if (Array.isArray(value)) return value.map((item) => mapStrings(item, f))
  if (value !== null && typeof value === "object") return Object.fromEntries(Object.entries(value).map(([key, item]) => [key, mapStrings(item, f)]))
  return value
}

const utf8 = new TextEncoder()
/**
 * The size in bytes of a value's JSON text (UTF-8), for the size bounds of JSON fields. Not
 * Node's Buffer: the browser SDK bundles these checks, and a browser has no Buffer.
 */
export const jsonBytes = (value: unknown): number => utf8.encode(JSON.stringify(value)).length
