/** Calls `handle` with every JSON line a child process writes (non-JSON lines are skipped). */
export const onJsonLines = <T = any>(stream: NodeJS.ReadableStream, handle: (line: T) => void) => {
  let buffer = ""
  stream.on("data", (chunk: Buffer) => {
    buffer += chunk.toString("utf8")
    let newline: number
    while ((newline = buffer.indexOf("\n")) >= 0) {
      const line = buffer.slice(0, newline)
      buffer = buffer.slice(newline + 1)
      let parsed: T
      try {
        parsed = JSON.parse(line) as T
      } catch {
        continue
      }
      handle(parsed)
    }
  })
}
