/**
 * The rate limiter's windows are aligned to the epoch (a new one starts every `windowSeconds`), and
 * past a boundary the previous window's count fades out: budget comes back. A test that counts a
 * budget exactly waits, when needed, so that it runs inside one window.
 */
export const insideOneWindow = async (windowSeconds: number, needSeconds: number) => {
  const windowMs = windowSeconds * 1000
  const left = windowMs - (Date.now() % windowMs)
  if (left < needSeconds * 1000) await new Promise((resolve) => setTimeout(resolve, left + 200))
}

/**
 * A window length (whole seconds, at least `minSeconds`) whose current epoch-aligned window has at
 * least `roomSeconds` left. A suite that picks its window with this, before it starts the service,
 * runs inside one window without waiting for the next (an hour-long window waits up to
 * `needSeconds` whenever the suite happens to start near the top of the hour).
 */
export const roomyWindow = (minSeconds: number, roomSeconds: number, now = Date.now()): number => {
  for (let seconds = minSeconds; ; seconds++) {
    const windowMs = seconds * 1000
    if (windowMs - (now % windowMs) >= roomSeconds * 1000) return seconds
  }
}
