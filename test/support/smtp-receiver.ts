/**
 * A mail server on loopback for the suites that send mail: it speaks enough SMTP (RFC 5321:
 * EHLO/HELO, MAIL, RCPT, DATA, RSET, NOOP, QUIT; no STARTTLS, no AUTH) for nodemailer to deliver
 * to it, keeps every message, and decodes the text body (7bit, quoted-printable or base64) so a
 * test can read the link a mail carries. WA_SMTP_URL for the service: `receiver.url`.
 */
import * as net from "node:net"

export interface ReceivedMail {
  readonly from: string
  readonly to: ReadonlyArray<string>
  readonly subject: string
  /** The decoded text body. */
  readonly text: string
  readonly raw: string
}

export interface SmtpReceiver {
  readonly url: string
  readonly mails: Array<ReceivedMail>
  /** The first mail to `to` (after the `after`-th mail overall) whose text matches `test`; waits up to 10 s. */
  readonly waitFor: (to: string, test?: (mail: ReceivedMail) => boolean, after?: number) => Promise<ReceivedMail>
  readonly close: () => Promise<void>
}

const decodeQuotedPrintable = (body: string) =>
  Buffer.from(
    body.replace(/=\r?\n/g, "").replace(/=([0-9A-F]{2})/gi, (_, hex: string) => String.fromCharCode(parseInt(hex, 16))),
    "latin1"
  ).toString("utf8")

/** Headers (unfolded, names lower-cased) and the decoded body of a single-part text message. */
const parse = (raw: string) => {
  const split = raw.indexOf("\r\n\r\n")
  const head = raw.slice(0, split).replace(/\r\n[ \t]+/g, " ")
  const body = raw.slice(split + 4)
  const headers = new Map<string, string>()
  for (const line of head.split("\r\n")) {
    const colon = line.indexOf(":")
    if (colon > 0) headers.set(line.slice(0, colon).trim().toLowerCase(), line.slice(colon + 1).trim())
  }
  const encoding = (headers.get("content-transfer-encoding") ?? "7bit").toLowerCase()
  const text = encoding === "quoted-printable"
    ? decodeQuotedPrintable(body)
    : encoding === "base64"
    ? Buffer.from(body.replace(/\s+/g, ""), "base64").toString("utf8")
    : body
  return { subject: headers.get("subject") ?? "", text: text.replace(/\r\n/g, "\n") }
}

export const startSmtpReceiver = async (): Promise<SmtpReceiver> => {
  const mails: Array<ReceivedMail> = []
  const waiters = new Set<() => void>()
  const server = net.createServer((socket) => {
    socket.setEncoding("latin1")
    let buffer = ""
    let inData = false
    let from = ""
    let to: Array<string> = []
    const reply = (line: string) => socket.write(`${line}\r\n`)
    reply("220 localhost ESMTP test receiver")
    socket.on("data", (chunk: string) => {
      buffer += chunk
      for (;;) {
        if (inData) {
          const end = buffer.indexOf("\r\n.\r\n")
          if (end === -1) return
          // Dot-stuffing (RFC 5321 4.5.2): a line's leading dot was doubled by the sender.
          const raw = buffer.slice(0, end).replace(/^\.\./gm, ".")
          buffer = buffer.slice(end + 5)
          inData = false
          mails.push({ from, to, ...parse(raw), raw })
          from = ""
          to = []
          reply("250 2.0.0 queued")
          for (const wake of waiters) wake()
          continue
        }
        const newline = buffer.indexOf("\r\n")
        if (newline === -1) return
        const line = buffer.slice(0, newline)
        buffer = buffer.slice(newline + 2)
        const verb = line.slice(0, 4).toUpperCase()
        if (verb === "EHLO") reply("250-localhost\r\n250-8BITMIME\r\n250 SMTPUTF8")
        else if (verb === "HELO") reply("250 localhost")
        else if (verb === "MAIL") {
          from = /<([^>]*)>/.exec(line)?.[1] ?? ""
          reply("250 2.1.0 ok")
        } else if (verb === "RCPT") {
          to.push(/<([^>]*)>/.exec(line)?.[1] ?? "")
          reply("250 2.1.5 ok")
        } else if (verb === "DATA") {
          inData = true
          reply("354 end with <CRLF>.<CRLF>")
        } else if (verb === "RSET") {
          from = ""
          to = []
          reply("250 2.0.0 ok")
        } else if (verb === "NOOP") reply("250 2.0.0 ok")
        else if (verb === "QUIT") {
          reply("221 2.0.0 bye")
          socket.end()
        } else reply("502 5.5.2 command not implemented")
      }
    })
    socket.on("error", () => socket.destroy())
  })
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  const { port } = server.address() as net.AddressInfo

  const waitFor = (address: string, test: (mail: ReceivedMail) => boolean = () => true, after = 0) =>
    new Promise<ReceivedMail>((resolve, reject) => {
      const find = () => mails.slice(after).find((mail) => mail.to.some((t) => t.toLowerCase() === address.toLowerCase()) && test(mail))
      const check = () => {
        const found = find()
        if (found === undefined) return
        clearTimeout(timer)
        waiters.delete(check)
        resolve(found)
      }
      const timer = setTimeout(() => {
        waiters.delete(check)
        reject(new Error(`no mail to ${address} within 10 s (received: ${mails.map((m) => `${m.to.join(",")}: ${m.subject}`).join("; ") || "none"})`))
      }, 10_000)
      waiters.add(check)
      check()
    })

  return {
    url: `smtp://127.0.0.1:${port}`,
    mails,
    waitFor,
    close: () => new Promise<void>((resolve) => server.close(() => resolve()))
  }
}

/** The token of the first service link to `path` (e.g. /console/reset-password) in a mail's text. */
export const tokenOfLink = (mail: ReceivedMail, path: string): string => {
  const match = new RegExp(`https?://[^\\s]+${path.replace(/[/]/g, "\\/")}\\?token=([A-Za-z0-9_%-]+)`).exec(mail.text)
  if (match === null) throw new Error(`no ${path} link in the mail:\n${mail.text}`)
  return decodeURIComponent(match[1]!)
}
