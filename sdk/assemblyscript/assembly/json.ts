// A small JSON value type with a parser and a serializer: what a handler needs to read
// its inputs and build tool inputs and results. Objects keep their keys in insertion
// order; numbers are f64 and integral values print without a fraction.

export enum Kind {
  Null,
  Bool,
  Number,
  String,
  Array,
  Object,
}

export class JSONValue {
  kind: Kind = Kind.Null;
  b: bool = false;
  n: f64 = 0;
  s: string = "";
  items: JSONValue[] = [];
  keys: string[] = [];

  static null(): JSONValue {
    return new JSONValue();
  }
  static bool(b: bool): JSONValue {
    const v = new JSONValue();
    v.kind = Kind.Bool;
    v.b = b;
    return v;
  }
  static number(n: f64): JSONValue {
    const v = new JSONValue();
    v.kind = Kind.Number;
    v.n = n;
    return v;
  }
  static string(s: string): JSONValue {
    const v = new JSONValue();
    v.kind = Kind.String;
    v.s = s;
    return v;
  }
  static array(): JSONValue {
    const v = new JSONValue();
    v.kind = Kind.Array;
    return v;
  }
  static object(): JSONValue {
    const v = new JSONValue();
    v.kind = Kind.Object;
    return v;
  }
  static strings(list: string[]): JSONValue {
    const v = JSONValue.array();
    for (let i = 0; i < list.length; i++) v.push(JSONValue.string(list[i]));
    return v;
  }

  get isNull(): bool {
    return this.kind == Kind.Null;
  }

  /** The member `key` of an object, or null when absent or not an object. */
  get(key: string): JSONValue | null {
    if (this.kind != Kind.Object) return null;
    for (let i = 0; i < this.keys.length; i++) {
      if (this.keys[i] == key) return this.items[i];
    }
    return null;
  }
  /** Sets member `key` of an object (replacing it when present); returns this. */
  set(key: string, v: JSONValue): JSONValue {
    for (let i = 0; i < this.keys.length; i++) {
      if (this.keys[i] == key) {
        this.items[i] = v;
        return this;
      }
    }
    this.keys.push(key);
    this.items.push(v);
    return this;
  }
  setString(key: string, s: string): JSONValue {
    return this.set(key, JSONValue.string(s));
  }
  setNumber(key: string, n: f64): JSONValue {
    return this.set(key, JSONValue.number(n));
  }
  setBool(key: string, b: bool): JSONValue {
    return this.set(key, JSONValue.bool(b));
  }
  /** Appends to an array; returns this. */
  push(v: JSONValue): JSONValue {
    this.items.push(v);
    return this;
  }
  get length(): i32 {
    return this.items.length;
  }
  at(i: i32): JSONValue {
    return this.items[i];
  }

  /** The string of a string value, or "" for any other kind. */
  str(): string {
    return this.kind == Kind.String ? this.s : "";
  }
  /** The string member `key`, or "". */
  getString(key: string): string {
    const v = this.get(key);
    return v == null ? "" : v.str();
  }
  /** The number member `key`, or 0. */
  getNumber(key: string): f64 {
    const v = this.get(key);
    return v == null || v.kind != Kind.Number ? 0 : v.n;
  }
  /** The boolean member `key`, or false. */
  getBool(key: string): bool {
    const v = this.get(key);
    return v == null || v.kind != Kind.Bool ? false : v.b;
  }

  stringify(): string {
    const out: string[] = [];
    write(this, out);
    return out.join("");
  }
}

function write(v: JSONValue, out: string[]): void {
  switch (v.kind) {
    case Kind.Null:
      out.push("null");
      break;
    case Kind.Bool:
      out.push(v.b ? "true" : "false");
      break;
    case Kind.Number:
      out.push(formatNumber(v.n));
      break;
    case Kind.String:
      out.push(quote(v.s));
      break;
    case Kind.Array:
      out.push("[");
      for (let i = 0; i < v.items.length; i++) {
        if (i > 0) out.push(",");
        write(v.items[i], out);
      }
      out.push("]");
      break;
    default:
      out.push("{");
      for (let i = 0; i < v.keys.length; i++) {
        if (i > 0) out.push(",");
        out.push(quote(v.keys[i]));
        out.push(":");
        write(v.items[i], out);
      }
      out.push("}");
  }
}

function formatNumber(n: f64): string {
  if (!isFinite(n)) return "null"; // as JSON.stringify does
  if (n == Math.floor(n) && Math.abs(n) < 9007199254740992.0) return (<i64>n).toString();
  return n.toString();
}

const HEX = "0123456789abcdef";

/** s as a JSON string literal. */
export function quote(s: string): string {
  let out = '"';
  let start = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    let esc = "";
    if (c == 0x22) esc = '\\"';
    else if (c == 0x5c) esc = "\\\\";
    else if (c == 0x0a) esc = "\\n";
    else if (c == 0x0d) esc = "\\r";
    else if (c == 0x09) esc = "\\t";
    else if (c == 0x08) esc = "\\b";
    else if (c == 0x0c) esc = "\\f";
    else if (c < 0x20) esc = "\\u00" + HEX.charAt(c >> 4) + HEX.charAt(c & 15);
    else continue;
    out += s.substring(start, i) + esc;
    start = i + 1;
  }
  return out + s.substring(start) + '"';
}

class Parser {
  pos: i32 = 0;
  err: string = "";
  constructor(public src: string) {}

  fail(what: string): JSONValue {
    if (this.err == "") this.err = what + " at offset " + this.pos.toString();
    return JSONValue.null();
  }
  ws(): void {
    while (this.pos < this.src.length) {
      const c = this.src.charCodeAt(this.pos);
      if (c != 0x20 && c != 0x0a && c != 0x0d && c != 0x09) break;
      this.pos++;
    }
  }
  value(depth: i32): JSONValue {
    if (depth > 512) return this.fail("nested too deeply");
    this.ws();
    if (this.pos >= this.src.length) return this.fail("unexpected end");
    const c = this.src.charCodeAt(this.pos);
    if (c == 0x7b) return this.object(depth);
    if (c == 0x5b) return this.array(depth);
    if (c == 0x22) {
      const s = this.string();
      return this.err != "" ? JSONValue.null() : JSONValue.string(s);
    }
    if (this.src.startsWith("true", this.pos)) {
      this.pos += 4;
      return JSONValue.bool(true);
    }
    if (this.src.startsWith("false", this.pos)) {
      this.pos += 5;
      return JSONValue.bool(false);
    }
    if (this.src.startsWith("null", this.pos)) {
      this.pos += 4;
      return JSONValue.null();
    }
    return this.number();
  }
  number(): JSONValue {
    const start = this.pos;
    while (this.pos < this.src.length) {
      const c = this.src.charCodeAt(this.pos);
      if ((c >= 0x30 && c <= 0x39) || c == 0x2d || c == 0x2b || c == 0x2e || c == 0x65 || c == 0x45) this.pos++;
      else break;
    }
    if (start == this.pos) return this.fail("unexpected character");
    return JSONValue.number(parseFloat(this.src.substring(start, this.pos)));
  }
  string(): string {
    this.pos++; // opening quote
    let out = "";
    let start = this.pos;
    while (this.pos < this.src.length) {
      const c = this.src.charCodeAt(this.pos);
      if (c == 0x22) {
        out += this.src.substring(start, this.pos);
        this.pos++;
        return out;
      }
      if (c != 0x5c) {
        this.pos++;
        continue;
      }
      out += this.src.substring(start, this.pos);
      const e = this.src.charCodeAt(this.pos + 1);
      this.pos += 2;
      if (e == 0x6e) out += "\n";
      else if (e == 0x74) out += "\t";
      else if (e == 0x72) out += "\r";
      else if (e == 0x62) out += "\b";
      else if (e == 0x66) out += "\f";
      else if (e == 0x75) {
        const code = <i32>parseInt(this.src.substring(this.pos, this.pos + 4), 16);
        out += String.fromCharCode(code);
        this.pos += 4;
      } else out += String.fromCharCode(e);
      start = this.pos;
    }
    this.fail("unterminated string");
    return "";
  }
  array(depth: i32): JSONValue {
    this.pos++;
    const v = JSONValue.array();
    this.ws();
    if (this.src.charCodeAt(this.pos) == 0x5d) {
      this.pos++;
      return v;
    }
    while (this.err == "") {
      v.push(this.value(depth + 1));
      this.ws();
      const c = this.src.charCodeAt(this.pos);
      this.pos++;
      if (c == 0x5d) return v;
      if (c != 0x2c) return this.fail("expected , or ]");
    }
    return v;
  }
  object(depth: i32): JSONValue {
    this.pos++;
    const v = JSONValue.object();
    this.ws();
    if (this.src.charCodeAt(this.pos) == 0x7d) {
      this.pos++;
      return v;
    }
    while (this.err == "") {
      this.ws();
      if (this.src.charCodeAt(this.pos) != 0x22) return this.fail("expected a key");
      const key = this.string();
      this.ws();
      if (this.src.charCodeAt(this.pos) != 0x3a) return this.fail("expected :");
      this.pos++;
      v.keys.push(key);
      v.items.push(this.value(depth + 1));
      this.ws();
      const c = this.src.charCodeAt(this.pos);
      this.pos++;
      if (c == 0x7d) return v;
      if (c != 0x2c) return this.fail("expected , or }");
    }
    return v;
  }
}

/** The result of parse: the value, or err saying what is wrong and where. */
export class Parsed {
  constructor(public value: JSONValue, public err: string) {}
}

export function parse(src: string): Parsed {
  const p = new Parser(src);
  const v = p.value(0);
  p.ws();
  if (p.err == "" && p.pos < src.length) p.fail("trailing data");
  return new Parsed(v, p.err);
}
