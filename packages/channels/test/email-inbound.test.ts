import { randomBytes } from "node:crypto";
import { describe, expect, it } from "vitest";
import { parseInboundEmail, safeFilename, threadHints } from "../src/email/inbound.js";
import { withoutQuotedHistory } from "../src/email/reply-text.js";
import { sendRawEmail, startSmtpSink } from "../testing/smtp-sink.js";

/** A raw message with CRLF line ends, as it arrives over SMTP. */
function rawEmail(lines: string[]): string {
  return `${lines.join("\r\n")}\r\n`;
}

const replyHeaders = [
  'From: "Jane Doe" <Jane@Example.com>',
  "To: Acme Support <Support@Acme.test>",
  "Cc: boss@example.com, support@acme.test",
  "Delivered-To: inbox+7@acme.test",
  "X-Original-To: Alias@Acme.test",
  "Subject: Re: Order 1234",
  "Date: Mon, 06 Jan 2025 10:05:00 +0000",
  "Message-ID:   <CAF=reply-1@mail.example.com>  ",
  "In-Reply-To: <msg_01jtestemail@acme.test> (Acme Support's message)",
  "References: <first@mail.example.com>\r\n <msg_01jtestemail@acme.test>",
];

describe("parseInboundEmail", () => {
  it("reads a reply's ids, addresses and date, and strips the quoted history", async () => {
    const email = await parseInboundEmail(
      rawEmail([
        ...replyHeaders,
        "Content-Type: text/plain; charset=utf-8",
        "",
        "Thanks, it arrived!",
        "",
        "On Mon, Jan 6, 2025 at 10:00 AM Acme Support <support@acme.test> wrote:",
        "> Your order has shipped.",
        "> Tracking: 1Z999",
      ]),
    );

    expect(email.messageId).toBe("<CAF=reply-1@mail.example.com>");
    expect(email.inReplyTo).toBe("<msg_01jtestemail@acme.test>");
    expect(email.references).toEqual(["<first@mail.example.com>", "<msg_01jtestemail@acme.test>"]);
    expect(threadHints(email)).toEqual(["<msg_01jtestemail@acme.test>", "<first@mail.example.com>"]);
    expect(email.from).toEqual({ address: "jane@example.com", name: "Jane Doe" });
    expect(email.to).toEqual(["support@acme.test", "boss@example.com", "inbox+7@acme.test", "alias@acme.test"]);
    expect(email.subject).toBe("Re: Order 1234");
    expect(email.date?.toISOString()).toBe("2025-01-06T10:05:00.000Z");
    expect(email.text).toBe("Thanks, it arrived!");
    expect(email.attachments).toEqual([]);
  });

  it("brackets ids that a client sent bare", async () => {
    const email = await parseInboundEmail(
      rawEmail([
        "From: jane@example.com",
        "Message-ID: bare-1@mail.example.com",
        "In-Reply-To: msg_a@acme.test",
        "References: first@mail.example.com msg_a@acme.test",
        "",
        "Hi",
      ]),
    );

    expect(email.messageId).toBe("<bare-1@mail.example.com>");
    expect(email.inReplyTo).toBe("<msg_a@acme.test>");
    expect(email.references).toEqual(["<first@mail.example.com>", "<msg_a@acme.test>"]);
    expect(email.from).toEqual({ address: "jane@example.com", name: null });
  });

  it("ignores ids longer than a header line may be (998 bytes), which no index could hold", async () => {
    const long = `<${"é".repeat(600)}@mail.example.com>`;
    const email = await parseInboundEmail(
      rawEmail([
        "From: jane@example.com",
        `Message-ID: ${long}`,
        `In-Reply-To: ${long}`,
        `References: ${long} <first@mail.example.com>`,
        "",
        "Hi",
      ]),
    );

    expect(email.messageId).toBeNull();
    expect(email.inReplyTo).toBeNull();
    expect(email.references).toEqual(["<first@mail.example.com>"]);
    expect(email.text).toBe("Hi");
  });

  it("drops NUL characters from every field, which PostgreSQL cannot store, and keeps the mail", async () => {
    const email = await parseInboundEmail(
      rawEmail([
        "From: Ja\u0000ne <jane@example.com>",
        "Subject: /etc/passwd\u0000.png",
        "Message-ID: <id-\u0000-1@mail.example.com>",
        "",
        "Hi\u0000 there",
      ]),
    );

    expect(email).toMatchObject({
      from: { address: "jane@example.com", name: "Jane" },
      subject: "/etc/passwd.png",
      messageId: "<id--1@mail.example.com>",
      text: "Hi there",
    });
  });

  it("keeps the reply written between and below quotes, and lines the parser takes for signatures", async () => {
    const email = await parseInboundEmail(
      rawEmail([
        "From: jane@example.com",
        "",
        "Part one",
        "---",
        "Part two",
        "",
        "On Mon, Jan 6, 2025 at 10:00 AM Acme Support <support@acme.test> wrote:",
        "> Which size?",
        "",
        "Size M please.",
      ]),
    );

    expect(email.text).toContain("Part one\n---\nPart two");
    expect(email.text).toContain("Size M please.");
    expect(email.text).not.toContain("Which size?");
  });

  it("keeps the full text when everything is quoted", async () => {
    const email = await parseInboundEmail(rawEmail(["From: jane@example.com", "", "> only a quote", "> nothing new"]));

    expect(email.text).toBe("> only a quote\n> nothing new");
  });

  it("converts HTML-only mail to text, without styles, and strips a quoted blockquote", async () => {
    const email = await parseInboundEmail(
      rawEmail([
        "From: jane@example.com",
        "Content-Type: text/html; charset=utf-8",
        "",
        "<html><head><style>p { color: red }</style><title>t</title></head><body>",
        "<p>Hello&nbsp;there &amp; thanks &lt;3</p><div>Second<br>line &#233;&#x2764;</div>",
        "<ul><li>one</li><li>two</li></ul>",
        '<div class="gmail_quote">On Mon, Jan 6, 2025 at 10:00 AM Acme Support &lt;support@acme.test&gt; wrote:<br>',
        "<blockquote>Your order has shipped.<br>Tracking: 1Z999</blockquote></div>",
        "</body></html>",
      ]),
    );

    expect(email.text).toBe("Hello there & thanks <3\n\nSecond\nline é❤\n\n* one\n* two");
  });

  it("uses the plain part when there are both, and returns null text for an empty body", async () => {
    const both = await parseInboundEmail(
      rawEmail([
        "From: jane@example.com",
        'Content-Type: multipart/alternative; boundary="b"',
        "",
        "--b",
        "Content-Type: text/plain",
        "",
        "Plain words",
        "--b",
        "Content-Type: text/html",
        "",
        "<p>HTML words</p>",
        "--b--",
      ]),
    );
    const empty = await parseInboundEmail(rawEmail(["From: jane@example.com", "Subject:   ", "", "  "]));

    expect(both.text).toBe("Plain words");
    expect(empty.text).toBeNull();
    expect(empty.subject).toBeNull();
  });

  it("keeps attached files with safe names and skips images the HTML embeds", async () => {
    const bytes = randomBytes(300);
    const part = (headers: string[], body: string) => ["--mix", ...headers, "", body];
    const email = await parseInboundEmail(
      rawEmail([
        "From: jane@example.com",
        'Content-Type: multipart/mixed; boundary="mix"',
        "",
        ...part(["Content-Type: text/plain"], "See attached"),
        ...part(
          [
            'Content-Type: application/octet-stream; name="../../etc/passwd"',
            'Content-Disposition: attachment; filename="../../etc/passwd"',
          ],
          "root:x:0:0",
        ),
        ...part(
          [
            "Content-Type: text/plain",
            "Content-Disposition: attachment; filename*=utf-8''evil%0D%0AX-Injected%3A%201.txt",
          ],
          "x",
        ),
        ...part(
          ["Content-Type: application/pdf", "Content-Transfer-Encoding: base64", "Content-Disposition: attachment"],
          bytes.toString("base64"),
        ),
        ...part(["Content-Type: image/png", 'Content-Disposition: attachment; filename="..\\\\..\\\\win.ini"'], "png"),
        ...part(['Content-Type: multipart/related; boundary="rel"'], ""),
        "--rel",
        "Content-Type: text/html",
        "",
        '<p>Logo: <img src="cid:logo@acme"></p>',
        "--rel",
        "Content-Type: image/png",
        "Content-ID: <logo@acme>",
        "Content-Disposition: inline",
        "Content-Transfer-Encoding: base64",
        "",
        "iVBORw0KGgo=",
        "--rel--",
        "--mix--",
      ]),
    );

    expect(email.attachments.map((attachment) => attachment.filename)).toEqual([
      "passwd",
      "evilX-Injected_ 1.txt",
      "attachment.pdf",
      "win.ini",
    ]);
    // postal-mime keeps the line break before the boundary of a 7bit part.
    expect(email.attachments[0]?.content.toString().trimEnd()).toBe("root:x:0:0");
    expect(email.attachments[2]?.contentType).toBe("application/pdf");
    expect(email.attachments[2]?.content.equals(bytes)).toBe(true);
    expect(email.text).toContain("See attached");
  });

  it("never throws on garbage: empty fields instead", async () => {
    const empty = {
      messageId: null,
      inReplyTo: null,
      references: [],
      from: null,
      to: [],
      subject: null,
      text: null,
      date: null,
      attachments: [],
    };

    await expect(parseInboundEmail("garbage")).resolves.toEqual(empty);
    await expect(parseInboundEmail("")).resolves.toEqual(empty);
    await expect(parseInboundEmail(Buffer.from([0, 255, 1, 2, 3, 10, 13, 10]))).resolves.toEqual(empty);
    const broken = await parseInboundEmail(
      rawEmail(["From: <<<>>>", "Date: not a date", "Message-ID: <>", 'Content-Type: multipart/mixed; boundary="x"']),
    );
    expect(broken).toMatchObject({ from: null, date: null, messageId: null });
  });

  it("parses a reply delivered over SMTP into an inbound server", async () => {
    const inbound = await startSmtpSink();
    try {
      const raw = rawEmail([...replyHeaders, "", "Delivered over SMTP"]);
      await sendRawEmail(
        { host: inbound.host, port: inbound.port },
        { from: "jane@example.com", to: "support@acme.test", raw },
      );
      const [received] = await inbound.waitForMessages(1);
      if (!received) throw new Error("no message received");
      const email = await parseInboundEmail(received.raw);

      expect(received.envelope).toEqual({ from: "jane@example.com", to: ["support@acme.test"] });
      expect(email.messageId).toBe("<CAF=reply-1@mail.example.com>");
      expect(email.text).toBe("Delivered over SMTP");
    } finally {
      await inbound.close();
    }
  });
});

describe("safeFilename", () => {
  it("drops paths, control and bidi characters and leading dots, and bounds the length", () => {
    expect(safeFilename("../../etc/passwd", "text/plain")).toBe("passwd");
    expect(safeFilename("C:\\Users\\x\\a.txt", "text/plain")).toBe("a.txt");
    expect(safeFilename("a\r\nb\u0000c.txt", "text/plain")).toBe("abc.txt");
    expect(safeFilename("invoice\u202Efdp.exe", "application/pdf")).toBe("invoicefdp.exe");
    expect(safeFilename("..", "image/jpeg")).toBe("attachment.jpg");
    expect(safeFilename(".hidden", "text/plain")).toBe("hidden");
    expect(safeFilename(null, "application/x-unknown")).toBe("attachment.bin");
    const long = safeFilename(`${"é".repeat(300)}.pdf`, "application/pdf");
    expect([...long]).toHaveLength(200);
    expect(long.endsWith("é.pdf")).toBe(true);
  });
});

describe("withoutQuotedHistory", () => {
  const header = "On Mon, Jan 6, 2025 at 10:00 AM Acme Support <support@acme.test> wrote:";
  const paragraph = (label: string) => `${label}: ${"lorem ipsum dolor sit amet ".repeat(3).trim()}`;

  it("strips a long history below a reply, whatever its length", () => {
    const history = Array.from({ length: 800 }, (_, index) => `> ${paragraph(`old ${index}`)}`);
    const text = ["Thanks, got it.", "", header, ...history].join("\n");

    expect(withoutQuotedHistory(text)).toBe("Thanks, got it.");
  });

  it("strips Outlook-style history, which has no quote marks", () => {
    const history = Array.from({ length: 400 }, (_, index) => paragraph(`old ${index}`));
    const text = ["See below.", "", "From: Acme Support <support@acme.test>", "Sent: Monday", "", ...history].join(
      "\n",
    );

    expect(withoutQuotedHistory(text)).toBe("See below.");
  });

  it("keeps every line of a long reply without quotes, long lines included", () => {
    const longLine = `${"A very long unwrapped paragraph. ".repeat(40)}End.`;
    const lines = [longLine, ...Array.from({ length: 600 }, (_, index) => paragraph(`line ${index}`))];
    const text = lines.join("\n");

    expect(withoutQuotedHistory(text)).toBe(text);
  });

  it("keeps the answers of an interleaved reply that runs over several chunks", () => {
    // About 9,500 characters: three chunks, each ending inside a quote.
    const lines: string[] = [];
    for (let block = 0; block < 5; block++) {
      lines.push(...Array.from({ length: 20 }, (_, index) => `> ${paragraph(`question ${block}.${index}`)}`));
      lines.push("", `Answer ${block}.`, "");
    }
    const reply = withoutQuotedHistory(lines.join("\n"));

    expect(reply).not.toContain("question");
    expect(reply).toBe("Answer 0.\nAnswer 1.\nAnswer 2.\nAnswer 3.\nAnswer 4.");
  });

  it("stays fast on input crafted against the parser's regular expressions", () => {
    const hostile = [
      "Op x schreef y\n".repeat(20_000),
      "abc. x skrev y\n".repeat(20_000),
      "\n".repeat(200_000),
      " \n".repeat(100_000),
      "1234 from <x> ".repeat(5_000),
      "x on y at z ".repeat(10_000),
    ];
    for (const text of hostile) {
      const started = performance.now();
      withoutQuotedHistory(text);
      expect(performance.now() - started).toBeLessThan(3_000);
    }
  });

  it("converts hostile HTML in linear time", async () => {
    const html = ["<".repeat(200_000), "<a ".repeat(100_000), "<style>".repeat(50_000), "&#".repeat(100_000)];
    for (const body of html) {
      const started = performance.now();
      await parseInboundEmail(rawEmail(["From: jane@example.com", "Content-Type: text/html", "", body]));
      expect(performance.now() - started).toBeLessThan(3_000);
    }
  });
});
