// Text of the request (the host page chose it) as the approval page shows it: as it reads. A
// character that is not seen, or that changes how the text around it reads, could make the page say
// what is not signed: a right-to-left override before an amount shows 1000000 as 0000001, a line
// separator or a tag character is signed and not seen. Such characters are
// shown as escapes in a value (`escapeHidden`), and make a message be shown as hex (`readableText`).
// Decision 1504.

/** Controls, format characters (bidirectional marks, embeddings, overrides and isolates, zero-width
 * and tag characters, the BOM, ...), lone surrogates, and the line and paragraph separators. */
const HIDDEN = /[\p{Cc}\p{Cf}\p{Cs}\p{Zl}\p{Zp}]/gu;

/** The same in a message shown as text, but its tabs and line breaks, and the zero-width
 * (non-)joiners that emoji and some scripts are written with. */
const HIDDEN_IN_MESSAGE = /(?![\t\n\r\u200C\u200D])[\p{Cc}\p{Cf}\p{Cs}\p{Zl}\p{Zp}]/u;

/** `text` with each hidden character written as its `\uXXXX` escape(s) (as JSON writes them). */
export function escapeHidden(text: string): string {
  return text.replace(HIDDEN, (c) => Array.from({ length: c.length }, (_, i) => "\\u" + c.charCodeAt(i).toString(16).padStart(4, "0")).join(""));
}

/** Whether a message can be shown as the text it is (else it is shown as hex). */
export function readableText(text: string): boolean {
  return !HIDDEN_IN_MESSAGE.test(text);
}
