/**
 * The classifier's operation rules (classifier.ts classifyOperation): the operation a request
 * body or socket message names (page-submits.ts reads it) decides its category; reads, presence
 * and analytics events are none.
 */
import { describe, expect, it } from "vitest"
import { classifierRules, classifyOperation } from "../../src/safety/classifier.ts"

const categoryOf = (operation: string) => classifyOperation(operation, classifierRules)?.category

describe("an operation's name", () => {
  it("classifies sends, payments and account deletions however they are spelled", () => {
    for (const name of ["send", "message", "chat", "reply", "send_message", "sendMessage", "SendMessage", "chat.postMessage", "message.send", "messages:create", "new_message", "createComment", "chat/send", "post-reply"]) {
      expect(categoryOf(name), name).toBe("send_message")
    }
    for (const name of ["pay", "payment", "createPayment", "payments.create", "place_order", "order.place", "charge", "purchase", "payInvoice", "donate"]) {
      expect(categoryOf(name), name).toBe("payment")
    }
    for (const name of ["deleteAccount", "account.delete", "close_account", "accounts:deactivate", "DeleteMyAccount"]) {
      expect(categoryOf(name), name).toBe("account_deletion")
    }
    expect(classifyOperation("chat.sendMessage", classifierRules)?.because).toBe('operation "chat.sendMessage"')
  })

  it("leaves reads, presence and analytics alone", () => {
    for (const name of ["typing", "ping", "hello", "subscribe", "join", "get_messages", "messages.list", "message_read", "markRead", "page_view", "pageview", "message_sent", "purchase_history", "GetMessages", "send_code", "sendVerificationCode", "order_status", "chat.history"]) {
      expect(categoryOf(name), name).toBeUndefined()
    }
  })
})
