/**
 * playwright-core, loaded at its first use. Importing it takes a quarter to half a second of
 * start-up CPU, and the service needs it only when its first browser starts (the pool launches
 * at the first lease; the Chromium it picks is chosen then too), so `serve` is ready without it.
 * Modules import only types from "playwright-core" (`import type`); values come from here.
 */
type PlaywrightCore = typeof import("playwright-core")

let loading: Promise<PlaywrightCore> | undefined

export const playwright = (): Promise<PlaywrightCore> => (loading ??= import("playwright-core"))

/** Playwright's TimeoutError (its `errors.TimeoutError`), recognised without loading the module. */
export const isPlaywrightTimeout = (error: unknown): error is Error => error instanceof Error && error.name === "TimeoutError"
