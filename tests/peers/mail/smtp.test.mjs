// The SMTP sink (../smtp.mjs): aiosmtpd accepts real SMTP, and the reader finds the 6-digit code in
// the newest message to an address whatever the encoding (7bit, quoted-printable, base64,
// multipart with HTML), never returns a message twice, and times out with what it saw.
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { createConnection } from "node:net";
import { codeOf, startSmtpSink } from "../smtp.mjs";

let sink;
before(async () => {
  sink = await startSmtpSink();
});
after(async () => {
  await sink?.stop();
});

/** Sends `data` (a whole message) from `from` to `to` over plain SMTP, checking each reply code. */
function send(to, data, from = "login@vestibule.test") {
  return new Promise((ok, fail) => {
    const socket = createConnection({ host: sink.host, port: sink.port });
    const steps = [
      [220, `EHLO test.local`],
      [250, `MAIL FROM:<${from}>`],
      [250, `RCPT TO:<${to}>`],
      [250, "DATA"],
      [354, `${data.replace(/\r?\n/g, "\r\n").replace(/^\./gm, "..")}\r\n.`],
      [250, "QUIT"],
      [221, null],
    ];
    let buffer = "";
    socket.setEncoding("utf8");
    socket.on("data", (chunk) => {
      buffer += chunk;
      // A reply is complete at a line "NNN text" (not "NNN-text").
      for (;;) {
        const m = /^(\d{3}) .*\r\n/m.exec(buffer);
        if (!m) return;
        buffer = buffer.slice(m.index + m[0].length);
        const [want, next] = steps.shift();
        if (Number(m[1]) !== want) return fail(new Error(`SMTP: wanted ${want}, got ${m[0]}`));
        if (next === null) return socket.end(), ok();
        socket.write(`${next}\r\n`);
      }
    });
    socket.on("error", fail);
  });
}

const message = (to, headers, body) => `From: Vestibule <login@vestibule.test>\nTo: ${to}\nSubject: Your login code\nDate: Tue, 24 Nov 2026 10:00:00 +0000\nMessage-ID: <123456.789012@vestibule.test>\n${headers}\n\n${body}`;

test("a plain message's code is read, and the same message is not returned twice", async () => {
  const t0 = Date.now();
  await send("alice@example.test", message("alice@example.test", "Content-Type: text/plain; charset=utf-8", "Your code is 482913. It expires in 10 minutes."));
  assert.equal(await sink.waitForCode("alice@example.test", { after: t0 }), "482913");
  await assert.rejects(sink.waitForCode("alice@example.test", { timeoutMs: 300 }), /no new message to alice@example.test/);
  assert.ok(sink.codes.includes("482913"));
});

test("quoted-printable and base64 bodies, and a multipart/alternative with HTML", async () => {
  await send("qp@example.test", message("qp@example.test", "Content-Type: text/plain; charset=utf-8\nContent-Transfer-Encoding: quoted-printable", "Votre code =E2=80=94 70=\n5318 =3D valide"));
  assert.equal(await sink.waitForCode("qp@example.test"), "705318");

  const b64 = Buffer.from("Your code: 031337\n").toString("base64");
  await send("b64@example.test", message("b64@example.test", "Content-Type: text/plain\nContent-Transfer-Encoding: base64", b64));
  assert.equal(await sink.waitForCode("b64@example.test"), "031337");

  const html = Buffer.from('<p style="x">Code <b>246810</b></p>').toString("base64");
  const multi = message(
    "multi@example.test",
    'MIME-Version: 1.0\nContent-Type: multipart/alternative; boundary="b1"',
    `--b1\nContent-Type: text/html; charset=utf-8\nContent-Transfer-Encoding: base64\n\n${html}\n--b1--\n`,
  );
  await send("multi@example.test", multi);
  assert.equal(await sink.waitForCode("multi@example.test"), "246810");
});

test("the newest of several messages to one address wins, and other addresses' messages are not taken", async () => {
  await send("bob@example.test", message("bob@example.test", "Content-Type: text/plain", "code 111111"));
  await send("carol@example.test", message("carol@example.test", "Content-Type: text/plain", "code 333333"));
  await new Promise((ok) => setTimeout(ok, 20));
  await send("bob@example.test", message("bob@example.test", "Content-Type: text/plain", "code 222222"));
  assert.equal(await sink.waitForCode("bob@example.test"), "222222");
  assert.equal(await sink.waitForCode("carol@example.test"), "333333");
  assert.ok(sink.codes.includes("111111"), "a superseded code is still recorded for the secrets checks");
});

test("the envelope recipient counts even when the To header names someone else", async () => {
  await send("bcc@example.test", message("undisclosed-recipients:;", "Content-Type: text/plain", "code 909090"));
  assert.equal(await sink.waitForCode("bcc@example.test"), "909090");
});

test("codeOf ignores digits in headers and longer numbers", () => {
  assert.equal(codeOf(message("a@b.c", "Content-Type: text/plain", "ref 12345678, code 654321")), "654321");
  assert.equal(codeOf(message("a@b.c", "Content-Type: text/plain", "no code")), null);
});
