/**
 * The private-address classifier as a unit: every spelling of a non-public address is refused,
 * including IPv4 embedded in IPv6 (mapped, compatible, SIIT, NAT64, 6to4, Teredo). No traffic:
 * only literal addresses are classified and `checkPublicUrl` never resolves a literal IP.
 */
import { Effect } from "effect"
import { describe, expect, it } from "vitest"
import { checkPublicUrl, isPrivateAddress } from "../../src/net/private-address.ts"

const refused = (url: string) => Effect.runPromise(Effect.flip(checkPublicUrl(url, false)))

describe("private-address classifier", () => {
  it("refuses 127.0.0.1 in its IPv6 spellings (mapped dotted and hex, expanded, compatible)", () => {
    for (const address of ["::ffff:127.0.0.1", "::ffff:7f00:1", "0:0:0:0:0:ffff:7f00:1", "0000:0000:0000:0000:0000:FFFF:7F00:0001", "::127.0.0.1", "::7f00:1", "::ffff:0:7f00:1"]) {
      expect(isPrivateAddress(address), address).toBe(true)
    }
  })

  it("refuses IPv4 embedded by NAT64, 6to4 and Teredo when the IPv4 is not public", () => {
    for (const address of [
      "64:ff9b::7f00:1", "64:ff9b::127.0.0.1", "64:ff9b::a9fe:a9fe", // NAT64 well-known prefix: loopback, metadata
      "64:ff9b:1::808:808", // local-use NAT64 (RFC 8215) whatever it embeds
      "2002:7f00:1::", "2002:a9fe:a9fe::1", "2002:c0a8:101::1", // 6to4: loopback, metadata, 192.168.1.1
      "2001:0:7f00:1::", // Teredo server 127.0.0.1
      "2001:0:4136:e378:8000:63bf:80ff:fffe" // Teredo client ~0x80fffffe = 127.0.0.1
    ]) {
      expect(isPrivateAddress(address), address).toBe(true)
    }
  })

  it("refuses the IPv4 special ranges", () => {
    for (const address of [
      "0.0.0.0", "10.1.2.3", "100.64.0.1", "100.127.255.255", "127.0.0.1", "127.255.255.254", "169.254.169.254", "172.16.0.1", "172.31.255.255",
      "192.0.0.8", "192.0.2.1", "192.88.99.1", "192.168.1.1", "198.18.0.1", "198.19.255.255", "198.51.100.7", "203.0.113.9",
      "224.0.0.1", "239.255.255.250", "240.0.0.1", "255.255.255.255"
    ]) {
      expect(isPrivateAddress(address), address).toBe(true)
    }
  })

  it("refuses the IPv6 special ranges and anything outside global unicast", () => {
    for (const address of [
      "::", "::1", "fc00::1", "fd00:ec2::254", "fe80::1", "fe80::1%eth0", "febf::1", "fec0::1", "ff02::1", "ff05::1:3",
      "2001:db8::1", "3fff::1", "100::1", "2001:2::1", "2001:10::1", "5f00::1", "1::", "4000::1", "::ffff:10.0.0.1", "::ffff:a9fe:a9fe"
    ]) {
      expect(isPrivateAddress(address), address).toBe(true)
    }
  })

  it("lets public addresses through, also when embedded", () => {
    for (const address of ["8.8.8.8", "1.1.1.1", "93.184.216.34", "172.32.0.1", "100.128.0.1", "192.0.43.10", "::ffff:8.8.8.8", "64:ff9b::808:808", "2002:808:808::1", "2606:4700:4700::1111", "2001:4860:4860::8888"]) {
      expect(isPrivateAddress(address), address).toBe(false)
    }
  })

  it("checkPublicUrl refuses the URL spellings WHATWG URL normalises (mapped dotted -> hex)", async () => {
    for (const url of [
      "http://[::ffff:127.0.0.1]:8080/", "http://[::ffff:7f00:1]/", "http://[0:0:0:0:0:ffff:7f00:1]/", "http://[::127.0.0.1]/",
      "http://[64:ff9b::7f00:1]/", "http://[64:ff9b:1::a00:1]/", "http://[2002:7f00:1::]/", "http://[2001:0:7f00:1::]/",
      "http://0x7f.1/", "http://2130706433/", "http://127.1/", "http://[::]/", "http://localhost./", "http://LOCALHOST/", "http://metadata.google.internal./"
    ]) {
      const error = await refused(url)
      expect(error._tag, url).toBe("PrivateAddressRefused")
    }
    expect((await refused("http://[::ffff:127.0.0.1]/")).message).toMatch(/127\.0\.0\.1.*loopback/)
  })
})
