/** Reads a run's SSE stream over real HTTP until it ends (after the terminal event) or a deadline. */
export interface SseEvent {
  readonly id: number | undefined
  readonly event: string
  readonly data: any
}

export const readSse = async (url: string, headers: Record<string, string>, options: { timeoutMs?: number; stopAfter?: (events: Array<SseEvent>) => boolean } = {}) => {
  const controller = new AbortController()
  const timer = setTimeout(() => controller.abort(), options.timeoutMs ?? 60_000)
  const events: Array<SseEvent> = []
  let status = 0
  let contentType = ""
  /** True when the server closed the stream itself (not our timeout, not stopAfter). */
  let ended = false
  try {
    const response = await fetch(url, { headers, signal: controller.signal })
    status = response.status
    contentType = response.headers.get("content-type") ?? ""
    if (response.body === null) return { status, contentType, events, ended: true }
    const decoder = new TextDecoder()
    let buffer = ""
    const reader = response.body.getReader()
    while (true) {
      const { done, value } = await reader.read()
      if (done) {
        ended = true
        break
      }
      buffer += decoder.decode(value, { stream: true })
      let split: number
      while ((split = buffer.indexOf("\n\n")) >= 0) {
        const raw = buffer.slice(0, split)
        buffer = buffer.slice(split + 2)
        let id: number | undefined
        let event = "message"
        let data = ""
        for (const line of raw.split("\n")) {
          if (line.startsWith("id: ")) id = Number(line.slice(4))
          else if (line.startsWith("event: ")) event = line.slice(7)
          else if (line.startsWith("data: ")) data += line.slice(6)
        }
        events.push({ id, event, data: data === "" ? undefined : JSON.parse(data) })
        if (options.stopAfter?.(events)) {
          controller.abort()
          return { status, contentType, events, ended }
        }
      }
    }
  } catch (error) {
    if (!controller.signal.aborted) throw error
  } finally {
    clearTimeout(timer)
  }
  return { status, contentType, events, ended }
}
