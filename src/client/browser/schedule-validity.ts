/**
 * src/domain/schedule-validity.ts as the browser SDK reads it (vite.client.config.ts): every cron
 * expression and time zone passes, so the bundle holds neither effect's Cron nor its time-zone
 * code. The server decides them and answers a bad one with a 422 `validation_error`; the SDK
 * checks a schedule's shape (kind, field types and bounds) with the same schemas as the server.
 */
import { Result } from "effect"
import type * as Validity from "../../domain/schedule-validity.ts"

export type { ScheduleProblem } from "../../domain/schedule-validity.ts"

export const REFERENCE: typeof Validity.REFERENCE = new Date("2025-01-01T00:00:00Z")

export const zoneProblem: typeof Validity.zoneProblem = () => undefined

export const cronProblem: typeof Validity.cronProblem = () => undefined

/** Not called by anything the SDK runs (the server computes slots). */
export const parseCron: typeof Validity.parseCron = () => Result.fail("cron expressions are read by the server")
