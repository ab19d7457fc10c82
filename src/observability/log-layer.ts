/**
 * The logger every command runs with: JSON lines through the shared batch (LogLines), at the
 * configured level, or at Warn for one-shot commands whose stdout is their JSON answer.
 */
import { Effect, Layer, References } from "effect"
import { AppConfig } from "../config/config.ts"
import { JsonLoggerLive, LogLines } from "./logger.ts"

export const logLayer = (level: "Info" | "Warn") =>
  Layer.unwrap(Effect.gen(function*() {
    const config = yield* AppConfig
    return Layer.mergeAll(
      JsonLoggerLive,
      Layer.succeed(References.MinimumLogLevel, level === "Warn" ? "Warn" : config.logLevel)
    ).pipe(Layer.provideMerge(LogLines.layer))
  }))
