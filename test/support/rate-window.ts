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
