/** Helpers of the billing suites. */
import { expect } from "vitest"
import type { Service } from "../support/service.ts"

/** Runs `wa ...` against the service's data dir, insists it succeeded, and parses the JSON it printed last. */
export const cliJson = async (service: Service, ...args: Array<string>) => {
  const result = await service.cli(...args)
  expect(result.code, result.stderr).toBe(0)
  return JSON.parse(result.stdout.trim().split("\n").at(-1)!)
}

export const micros = (usd: string) => Math.round(Number(usd) * 1_000_000)
