/**
 * How `wa` shows a run while it works: one line per step on stderr and, when stderr is a
 * terminal, a progress line under them that is rewritten in place (step count, the current
 * action, the phase, elapsed time). With `--json` nothing here is used.
 */
import type { StreamEvent } from "../client/sse.ts"

const short = (value: unknown, max = 80): string => {
  const text = typeof value === "string" ? value : JSON.stringify(value) ?? ""
  const line = text.replace(/\s+/g, " ").trim()
  return line.length > max ? `${line.slice(0, max - 1)}…` : line
}

/**
 * The line a person following a run sees for an event: the CLI's progress on stderr and the MCP
 * server's progress notifications. Undefined for events that add nothing to read (the final
 * result, cost updates, screenshots).
 */
export const describeEvent = (event: StreamEvent): string | undefined => {
  const data = (event.data ?? {}) as Record<string, any>
  switch (event.type) {
    case "run.status_changed":
      return `status: ${data.status ?? data.to}${data.phase ? ` (${data.phase})` : ""}`
    case "run.phase_changed":
      return `phase: ${data.phase}`
    case "run.action.started":
      return `→ ${data.action}${data.params && Object.keys(data.params).length > 0 ? ` ${short(data.params, 100)}` : ""}`
    case "run.action.completed":
      return `✓ ${data.action}${data.result !== undefined && data.action !== "done" ? ` ${short(data.result, 100)}` : ""}`
    case "run.action.failed":
      return `✗ ${data.action}: ${short(data.error ?? data.detail ?? data.message ?? data, 120)}`
    case "run.message":
      return `${data.role ?? "agent"}: ${short(data.content, 200)}`
    case "run.input_request":
      return `? ${short(data.prompt, 300)}`
    case "run.input_request_resolved":
      return "✓ answered"
    case "run.input_request_withdrawn":
      return "✓ handled by a person (take control)"
    case "run.research.progress":
      return `  ${data.phase ?? "progress"}${data.section_id ? ` ${data.section_id}` : ""}${
        data.sources_found !== undefined ? ` sources ${data.sources_found}/${data.sources_target ?? "?"}` : ""
      }`
    case "run.search.progress":
      return `  ${short(data, 120)}`
    case "run.completed":
    case "run.cost_update":
    case "run.screenshot":
      return undefined
    default:
      return `· ${event.type}`
  }
}

export class Progress {
  private steps = 0
  private current = ""
  private phase: string | undefined
  private readonly started = Date.now()
  private lineShown = false
  private readonly out: NodeJS.WriteStream
  private readonly live: boolean

  constructor(out: NodeJS.WriteStream = process.stderr) {
    this.out = out
    this.live = out.isTTY === true
  }

  /** Prints the line an event deserves and updates the progress line. */
  event(event: StreamEvent): void {
    const data = (event.data ?? {}) as Record<string, any>
    if (event.type === "run.action.started") {
      this.steps++
      this.current = String(data.action ?? "")
    } else if (event.type === "run.phase_changed") {
      this.phase = String(data.phase)
    } else if (event.type === "run.research.progress") {
      this.phase = data.phase ?? this.phase
    }
    const line = describeEvent(event)
    if (line !== undefined) this.print(line)
    this.render()
  }

  /** Clears the progress line (before the final output). */
  done(): void {
    if (this.live && this.lineShown) this.out.write("\r\x1b[K")
    this.lineShown = false
  }

  print(line: string): void {
    if (this.live && this.lineShown) this.out.write("\r\x1b[K")
    this.lineShown = false
    this.out.write(`${line}\n`)
  }

  private render(): void {
    if (!this.live) return
    const seconds = Math.round((Date.now() - this.started) / 1000)
    const parts = [`step ${this.steps}`, this.current, this.phase, `${seconds}s`].filter((p) => p !== undefined && p !== "")
    this.out.write(`\r\x1b[K… ${parts.join(" · ")}`)
    this.lineShown = true
  }
}
