/** A test's own HTTP server on a free loopback port: its port and base URL. */
import type { Server } from "node:http"
import type { AddressInfo } from "node:net"

export const listenOnLoopback = async (server: Server): Promise<{ readonly port: number; readonly url: string }> => {
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  const port = (server.address() as AddressInfo).port
  return { port, url: `http://127.0.0.1:${port}` }
}
