// JSON for Fulltime's wire protocol in JavaScript, where ids are 64-bit.
//
// Ids (bet_id, account_id, market_id, selection_id, next_before) are JSON integers that may use
// the whole signed 64-bit range (docs/protocol.md, "Clients in JavaScript: 64-bit ids"), and
// JSON.parse rounds an integer above 2^53 - 1 to another one, silently. So this module parses
// every JSON integer as a `bigint` (exact, whatever its size) and writes a `bigint` back as a
// bare JSON integer, which JSON.stringify refuses to do. Numbers with a fraction or an exponent
// stay `number` (the protocol has none: money and odds are decimal strings, and stay strings).
//
// parseJson is a small, strict JSON parser (RFC 8259): the engine's frames are a few hundred
// bytes and nest at most a few levels. JSON.parse's reviver cannot do this on Node.js 20: the
// source text it would need (`context.source`) is there only behind a V8 flag.

export type Json = null | boolean | number | bigint | string | Json[] | { [key: string]: Json };

const WHITESPACE = /[ \t\n\r]*/y;
const STRING = /"(?:[^"\\\u0000-\u001f]|\\(?:["\\/bfnrt]|u[0-9a-fA-F]{4}))*"/y;
const NUMBER = /-?(?:0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?/y;
const LITERAL = /true|false|null/y;

/** Parses JSON text; every integer becomes a bigint. Throws SyntaxError on anything else than
 *  one JSON value (with blanks around it). */
export function parseJson(text: string): Json {
  let at = 0;

  function match(pattern: RegExp): RegExpExecArray | null {
    pattern.lastIndex = at;
    const m = pattern.exec(text);
    if (m) at = pattern.lastIndex;
    return m;
  }
  function fail(what: string): never {
    throw new SyntaxError(`JSON: ${what} at offset ${at}`);
  }
  function skipBlanks(): void {
    match(WHITESPACE);
  }
  function expect(char: string): void {
    skipBlanks();
    if (text[at] !== char) fail(`expected '${char}'`);
    at++;
  }
  function string(): string {
    const m = match(STRING);
    if (!m) fail("bad string");
    return JSON.parse(m[0]) as string; // the escapes, as JSON.parse reads them
  }
  /** The items of an object or array, after its opening bracket, up to `close`. */
  function items(close: string, item: () => void): void {
    skipBlanks();
    if (text[at] === close) {
      at++;
      return;
    }
    for (;;) {
      item();
      skipBlanks();
      if (text[at] !== ",") break;
      at++;
    }
    expect(close);
  }
  function value(): Json {
    skipBlanks();
    const c = text[at];
    if (c === "{") {
      at++;
      const object: { [key: string]: Json } = {};
      items("}", () => {
        skipBlanks();
        const key = string();
        expect(":");
        // defineProperty, not `object[key] =`: a key "__proto__" is data, as in JSON.parse.
        Object.defineProperty(object, key, {
          value: value(), enumerable: true, writable: true, configurable: true,
        });
      });
      return object;
    }
    if (c === "[") {
      at++;
      const array: Json[] = [];
      items("]", () => array.push(value()));
      return array;
    }
    if (c === '"') return string();
    const number = match(NUMBER);
    if (number) {
      return number[1] === undefined && number[2] === undefined
        ? BigInt(number[0])
        : Number(number[0]);
    }
    const literal = match(LITERAL);
    if (literal) return literal[0] === "true" ? true : literal[0] === "false" ? false : null;
    return fail(c === undefined ? "unexpected end" : `unexpected '${c}'`);
  }

  const result = value();
  skipBlanks();
  if (at !== text.length) fail("trailing text");
  return result;
}

/** Writes `value` as JSON: a bigint as a bare integer, object keys in their order (or sorted),
 *  properties whose value is undefined left out (as JSON.stringify does). */
export function stringifyJson(value: unknown, sortKeys = false): string {
  switch (typeof value) {
    case "bigint":
      return value.toString();
    case "number":
      if (!Number.isFinite(value)) throw new TypeError(`JSON: ${value} is not a JSON number`);
      return JSON.stringify(value);
    case "string":
    case "boolean":
      return JSON.stringify(value);
    case "object": {
      if (value === null) return "null";
      if (Array.isArray(value)) {
        return "[" + value.map((v: unknown) => stringifyJson(v, sortKeys)).join(",") + "]";
      }
      const entries = Object.entries(value).filter(([, v]) => v !== undefined);
      if (sortKeys) entries.sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
      return "{" + entries
        .map(([k, v]) => JSON.stringify(k) + ":" + stringifyJson(v, sortKeys))
        .join(",") + "}";
    }
    default:
      throw new TypeError(`JSON: a ${typeof value} is not JSON`);
  }
}
