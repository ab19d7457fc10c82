/** JSON-like values whose string leaves (not keys) go through `f`: arrays and plain objects are rebuilt, other values kept. */
export const mapStrings = (value: unknown, f: (text: string) => string): unknown => {
  if (typeof value === "string") return f(value)
  if (Array.isArray(value)) return value.map((item) => mapStrings(item, f))
  if (value !== null && typeof value === "object") return Object.fromEntries(Object.entries(value).map(([key, item]) => [key, mapStrings(item, f)]))
  return value
}
