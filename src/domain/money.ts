/**
 * Money on the wire: USD as a decimal string, exact to the micro-dollar (the ledger's unit), with
 * at least two decimals and no more than it needs: 182 micro-USD is "0.000182", 1.5 USD is "1.50",
 * 0 is "0.00". Every view of an amount (runs, sessions, ticks, billing, errors, events) formats
 * it here, so a view shows what the ledger holds and the sum of the views is the ledger's sum.
 */

export const MICROS_PER_USD = 1_000_000

/** A float amount of USD (a price times a quantity) to integer micro-USD, rounded. */
export const toMicros = (usd: number): number => Math.round(usd * MICROS_PER_USD)

/** Integer micro-USD as the wire's decimal string ("0.000182", "1.50", "-2.25"). */
export const usdFromMicros = (micros: number | bigint): string => {
  const value = typeof micros === "bigint" ? micros : BigInt(Math.round(micros))
  const negative = value < 0n
  const magnitude = negative ? -value : value
  const whole = magnitude / 1_000_000n
  const fraction = (magnitude % 1_000_000n).toString().padStart(6, "0").replace(/0{1,4}$/, "")
  return `${negative && magnitude !== 0n ? "-" : ""}${whole}.${fraction.padEnd(2, "0")}`
}

/**
 * A decimal amount (PostgreSQL numeric as text, "0.000182", or a JS number) as integer micro-USD.
 * Strings are read digit by digit (no float on the way); beyond six decimals they round half away
 * from zero, as the ledger does.
 */
export const microsFromDecimal = (value: string | number): number => {
  if (typeof value === "number") return Math.round(value * MICROS_PER_USD)
  const match = /^\s*([+-]?)(\d*)(?:\.(\d*))?\s*$/.exec(value)
  if (match === null) return Math.round(Number(value) * MICROS_PER_USD)
  const [, sign, whole = "", fraction = ""] = match
  const micros = Number(whole === "" ? "0" : whole) * MICROS_PER_USD + Number(fraction.slice(0, 6).padEnd(6, "0")) +
    (Number(fraction.charAt(6) || "0") >= 5 ? 1 : 0)
  return sign === "-" ? -micros : micros
}

/** A decimal amount as the wire's string: `usdFromMicros(microsFromDecimal(value))`. */
export const usd = (value: string | number): string => usdFromMicros(microsFromDecimal(value))

/** The sum of decimal amounts, exact to the micro-dollar, as the wire's string. */
export const usdSum = (...values: ReadonlyArray<string | number>): string =>
  usdFromMicros(values.reduce<number>((sum, value) => sum + microsFromDecimal(value), 0))

/** A session's four cost fields of the spec (on its view and in its runs' `run.cost_update`), exact to the micro-dollar. */
export const costFields = (costs: { readonly llm_cost_usd: string; readonly browser_cost_usd: string; readonly proxy_cost_usd: string }) => ({
  llm_cost_usd: usd(costs.llm_cost_usd),
  browser_cost_usd: usd(costs.browser_cost_usd),
  proxy_cost_usd: usd(costs.proxy_cost_usd),
  total_cost_usd: usdSum(costs.llm_cost_usd, costs.browser_cost_usd, costs.proxy_cost_usd)
})
